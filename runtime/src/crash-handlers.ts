import type { Logger } from 'pino';
import { flushThenExit } from './logger';

/**
 * Makes a crash loud: an uncaught exception or unhandled rejection is logged at fatal level, then
 * the process exits non-zero so the orchestrator restarts it. Continuing after either would run
 * on unknown state.
 */
export function installCrashHandlers(logger: Logger, exit: (code: number) => void = (code) => flushThenExit(logger, code)): void {
  const crash = (kind: string) => (error: unknown) => {
    logger.fatal({ err: error }, kind);
    exit(1);
  };
  process.on('uncaughtException', crash('uncaught exception'));
  process.on('unhandledRejection', crash('unhandled rejection'));
}
