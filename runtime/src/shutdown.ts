import type { Logger } from 'pino';
import { flushThenExit } from './logger';

export interface ShutdownOptions {
  readonly logger: Logger;
  /**
   * How long to keep serving after `begin` before `drain`: readiness already fails, so load
   * balancers stop sending, while requests still on their way are served rather than refused.
   */
  readonly delayMs?: number;
  /** Bound on `drain`, counted after the delay: past it, `abandon` runs and the process exits 1. */
  readonly timeoutMs: number;
  /** Runs at once on the signal: readiness fails from here on. */
  readonly begin?: () => void;
  /** Drains and closes; resolves to the exit code. */
  readonly drain: () => Promise<number>;
  /** The last resort when `drain` outlives `timeoutMs` (killing workers, say). */
  readonly abandon?: () => void;
  /** The message logged when the timeout fires. */
  readonly timeoutMessage?: string;
}

/**
 * On the first SIGTERM or SIGINT: `begin`, then after `delayMs`, `drain`. Exits with the code `drain` resolves to;
 * with 1 if it fails, or if it is still running after `timeoutMs` (after calling `abandon`), since
 * the orchestrator's grace period assumes a bound and SIGKILL follows it. Log lines are flushed
 * before every exit.
 */
export function shutdownOnSignal(options: ShutdownOptions): void {
  const { logger } = options;
  const delayMs = options.delayMs ?? 0;
  let started = false;
  const stop = (signal: string): void => {
    if (started) return;
    started = true;
    options.begin?.();
    logger.info({ signal, delayMs }, 'shutting down');
    setTimeout(() => {
      logger.error(options.timeoutMessage ?? 'shutdown outlived SHUTDOWN_TIMEOUT_MS; exiting');
      options.abandon?.();
      flushThenExit(logger, 1);
    }, delayMs + options.timeoutMs).unref();
    new Promise<void>((resolve) => setTimeout(resolve, delayMs)).then(options.drain).then(
      (code) => {
        logger.info({ code }, 'stopped');
        flushThenExit(logger, code);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        flushThenExit(logger, 1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}
