import pino, { type Logger } from 'pino';

export interface LoggerOptions {
  readonly level: string;
  /** Human-readable lines via pino-pretty; for development only. */
  readonly pretty: boolean;
}

/** JSON lines on stdout, one object per event. */
export function createLogger(options: LoggerOptions): Logger {
  return pino({
    level: options.level,
    base: { service: 'pet-service' },
    transport: options.pretty ? { target: 'pino-pretty' } : undefined,
  });
}
