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
  /**
   * The IPC channel to the process that started this one (a child spawned with `'ipc'` in its
   * stdio: `process` itself, when `process.channel` is set). Its end means that process is gone,
   * however it died (SIGKILL included), and starts the same shutdown as SIGTERM: a launcher such as
   * `npm start` passes one so that no service outlives it. Unset: nothing is followed.
   */
  readonly parent?: ParentChannel;
}

/** What {@link ShutdownOptions.parent} needs of a child process's IPC channel. */
export interface ParentChannel {
  once(event: 'disconnect', listener: () => void): unknown;
}

/**
 * On the first SIGTERM or SIGINT, or the end of the `parent` channel: `begin`, then after
 * `delayMs`, `drain`; a later one is logged and changes nothing. Exits with the code `drain` resolves to;
 * with 1 if it fails, or if it is still running after `timeoutMs` (after calling `abandon`), since
 * the orchestrator's grace period assumes a bound and SIGKILL follows it. Log lines are flushed
 * before every exit.
 */
export function shutdownOnSignal(options: ShutdownOptions): void {
  const { logger } = options;
  const delayMs = options.delayMs ?? 0;
  let started = false;
  const stop = (cause: { signal: string } | { parent: 'exited' }): void => {
    if (started) {
      logger.info(cause, 'already shutting down');
      return;
    }
    started = true;
    options.begin?.();
    logger.info({ ...cause, delayMs }, 'shutting down');
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
  // Listened to for as long as the process lives: Ctrl-C in a terminal reaches a process that npm
  // started twice, from the terminal's process group and forwarded by npm, and a signal nobody
  // listens to any more ends the process at once, skipping the drain. The shutdown is bounded by
  // `timeoutMs`; SIGKILL is the way to end it sooner.
  process.on('SIGTERM', () => stop({ signal: 'SIGTERM' }));
  process.on('SIGINT', () => stop({ signal: 'SIGINT' }));
  options.parent?.once('disconnect', () => stop({ parent: 'exited' }));
}
