import type { Logger } from 'pino';
import { flushThenExit } from './logger';

/**
 * A start-up failure that the operator fixes outside the code (a setting, another process holding
 * a port, the store's credentials). Its message is the one line a service prints, naming the
 * variable, before it exits 1: no stack, since it is not a bug.
 */
export class StartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StartupError';
  }
}

/** Why a listener could not bind, for the causes that are the operator's to fix. */
const BIND_PROBLEMS: Readonly<Record<string, string>> = {
  EADDRINUSE: 'address already in use',
  EACCES: 'permission denied (a port below 1024 needs privileges)',
};

/**
 * A listener's failure to bind `port`, as the one line naming the variable that set it
 * (`PET_SERVICE_PORT 50051: address already in use`); any other error as it is. grpc-js reports a
 * failed bind as text only (`No address added out of total 1 resolved errors: [listen
 * EADDRINUSE: ...]`, with no `code`), so the code is also looked for in the message.
 */
export function listenFailure(error: unknown, variable: string, port: number): unknown {
  if (!(error instanceof Error)) return error;
  const { code } = error as NodeJS.ErrnoException;
  const found = code !== undefined && code in BIND_PROBLEMS ? code : Object.keys(BIND_PROBLEMS).find((name) => new RegExp(`\\b${name}\\b`).test(error.message));
  return found === undefined ? error : new StartupError(`${variable} ${port}: ${BIND_PROBLEMS[found]}`);
}

/**
 * Ends a service whose start failed, with exit code 1: a {@link StartupError} (a ConfigError among
 * them) as its one line on stderr, written directly (console may be routed to the log); anything
 * else logged at fatal level with its stack, as `message`.
 */
export function exitAfterStartupFailure(logger: Logger, error: unknown, message: string): void {
  if (error instanceof StartupError) process.stderr.write(`${error.message}\n`);
  else logger.fatal({ err: error }, message);
  flushThenExit(logger, 1);
}
