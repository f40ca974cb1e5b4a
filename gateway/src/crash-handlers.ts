import type { Logger } from 'pino';

/**
 * Makes a crash loud: an uncaught exception or unhandled rejection is logged at fatal level, then
 * the process exits non-zero so the orchestrator restarts it. Continuing after either would run
 * on unknown state.
 */
export function installCrashHandlers(logger: Logger, exit: (code: number) => void = process.exit): void {
  const crash = (kind: string) => (error: unknown) => {
    logger.fatal({ err: error }, kind);
    logger.flush?.();
    exit(1);
  };
  process.on('uncaughtException', crash('uncaught exception'));
  process.on('unhandledRejection', crash('unhandled rejection'));
}
