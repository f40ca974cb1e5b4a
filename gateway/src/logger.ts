import pino, { type Logger } from 'pino';

export interface LoggerOptions {
  readonly level: string;
  /** Human-readable lines via pino-pretty; for development only. */
  readonly pretty: boolean;
}

/**
 * JSON lines on stdout. The Authorization header is redacted wherever it might appear, as a
 * second line of defence: request lines never serialise headers in the first place.
 */
export function createLogger(options: LoggerOptions): Logger {
  return pino({
    level: options.level,
    base: { service: 'gateway' },
    redact: ['req.headers.authorization', 'headers.authorization', '*.headers.authorization'],
    transport: options.pretty ? { target: 'pino-pretty' } : undefined,
  });
}
