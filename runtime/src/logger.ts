import { writeSync } from 'node:fs';
import pino, { type Logger } from 'pino';

export interface LoggerOptions {
  /** Written as `service` on every line. */
  readonly service: string;
  readonly level: string;
  /** Human-readable lines via pino-pretty; for development only. */
  readonly pretty: boolean;
  /** The cluster worker's id, on every line it logs (the gateway's GATEWAY_WORKERS > 1). */
  readonly worker?: number;
}

/**
 * Where a logged object could carry an Authorization header: an incoming request, a bare headers
 * object, and an error that holds the request or the headers it was made with. Named paths only:
 * a wildcard (`*.headers.authorization`) makes the redactor walk and copy every line's object,
 * which cost more than the rest of a request line together, and the lines written most (one per
 * request) are a closed set of fields that never holds a header.
 */
export const REDACTED_PATHS: readonly string[] = [
  'req.headers.authorization',
  'request.headers.authorization',
  'headers.authorization',
  'err.headers.authorization',
  'err.config.headers.authorization',
  'err.request.headers.authorization',
  'err.req.headers.authorization',
];

const STDOUT = 1;

/**
 * JSON lines on stdout. The Authorization header is redacted where it might appear
 * ({@link REDACTED_PATHS}), as a second line of defence: request lines never serialise headers in
 * the first place.
 */
export function createLogger(options: LoggerOptions): Logger {
  const settings = {
    level: options.level,
    base: options.worker === undefined ? { service: options.service } : { service: options.service, worker: options.worker },
    redact: [...REDACTED_PATHS],
  };
  if (options.pretty) return pino({ ...settings, transport: { target: 'pino-pretty' } });
  // Asynchronous and batched: a synchronous write per line is a large share of the CPU a rejected
  // request costs (docs/performance.md gives the figure). Lines wait for 2 KiB of company or the 100 ms timer, whichever comes first;
  // exits go through flushThenExit so none is lost. Each write is whole lines and at most 4096
  // bytes (PIPE_BUF): cluster workers share the primary's stdout, and only writes that small stay
  // whole on a pipe that several processes write to.
  const destination = pino.destination({ dest: STDOUT, sync: false, minLength: 2048, maxWrite: 4096, contentMode: 'buffer' });
  writeLinesAsBuffers(destination);
  stopWritingWhenOutputIsGone(destination, STDOUT);
  setInterval(() => destination.flush(), 100).unref();
  return pino(settings, destination);
}

/**
 * pino writes each line as a string. sonic-boom's batches of strings (its default content mode)
 * measure the batch so far again at every line, which copies all of it (a rope then flattened): up
 * to 4 KiB a line, the most garbage a request made in the gateway's own code. In its 'buffer' mode
 * a batch is a list of Buffers whose byte lengths it adds up, joined once when written; each line
 * is encoded once, as a write of the string would.
 */
function writeLinesAsBuffers(destination: ReturnType<typeof pino.destination>): void {
  const writeBuffer = destination.write.bind(destination) as unknown as (line: Buffer) => boolean;
  destination.write = (line: string) => writeBuffer(Buffer.from(line));
}

/**
 * Once a write to stdout fails, every later line is dropped and the service goes on serving: a log
 * that cannot be written is no reason to refuse requests. pino stops writing on EPIPE only (a
 * reader that went away); sonic-boom (4.2) emits every other failed asynchronous write as an
 * 'error' event that nothing listens to, which would end the process, and retries a failed write
 * without end from the synchronous flush pino runs at exit, which hangs the process after it
 * closed its ports: the EIO of a terminal that was closed (`npm start`), a full disk.
 */
function stopWritingWhenOutputIsGone(destination: ReturnType<typeof pino.destination>, fd: number): void {
  let gone = false;
  const silence = (): void => {
    gone = true;
    destination.write = () => true;
    destination.flush = (callback) => void callback?.();
    destination.flushSync = () => undefined;
    destination.end = () => undefined;
  };
  destination.on('error', silence);
  const flushSync = destination.flushSync.bind(destination);
  destination.flushSync = () => {
    if (gone) return;
    // A write of nothing fails as any write would on a closed terminal, and costs nothing elsewhere.
    try {
      writeSync(fd, '');
    } catch {
      silence();
      return;
    }
    flushSync();
  };
}

/**
 * Whether LOG_PRETTY can be honoured. pino-pretty is a development dependency, absent from a
 * production install; without this check pino throws a stack trace instead of a config error.
 */
export function isPinoPrettyInstalled(): boolean {
  try {
    require.resolve('pino-pretty');
    return true;
  } catch {
    return false;
  }
}

/** Writes out buffered log lines, then exits; exits anyway after a second if the write hangs. */
export function flushThenExit(logger: Logger, code: number): void {
  setTimeout(() => process.exit(code), 1000).unref();
  logger.flush(() => process.exit(code));
}
