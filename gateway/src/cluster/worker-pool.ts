import cluster, { type Worker } from 'node:cluster';
import { StartupError } from '@petstore/runtime';
import type { Logger } from 'pino';

/** What a worker sends the primary when it cannot start for a reason the operator fixes. */
interface StartupFailureMessage {
  readonly gatewayStartupFailure: string;
}

/**
 * The message a worker sends before it exits on a {@link StartupError} (a port in use): the
 * primary prints its line, once, rather than every worker printing its own and the primary a
 * line of its own about them.
 */
export function startupFailureMessage(error: StartupError): StartupFailureMessage {
  return { gatewayStartupFailure: error.message };
}

function isStartupFailure(message: unknown): message is StartupFailureMessage {
  return typeof (message as Partial<StartupFailureMessage> | null)?.gatewayStartupFailure === 'string';
}

/** The gateway's worker processes, as the cluster primary sees them. */
export interface WorkerPool {
  /**
   * Resolves with the public port once every worker listens; rejects if a worker exits before
   * that, since a worker that cannot start (the port is taken, say) will not start on a retry:
   * with the worker's {@link StartupError} when it sent one.
   */
  readonly listening: Promise<number>;
  /** Workers listening now; fewer than asked for while a replacement starts. */
  serving(): Worker[];
  /**
   * SIGTERM to every worker; resolves, once all have exited, with whether each exited cleanly: 0,
   * or ended by that SIGTERM before it listened (a replacement still starting has no handler yet).
   */
  stop(): Promise<boolean>;
  /** SIGKILL to every worker still alive: the last resort when they outlive the shutdown timeout. */
  kill(): void;
}

export interface WorkerPoolOptions {
  readonly count: number;
  readonly logger: Logger;
  /** Pause before replacing a worker that died, so a crash loop does not spin. */
  readonly restartDelayMs?: number;
}

/**
 * Forks `count` workers that run this same program and share its public port through Node's
 * cluster module (the primary accepts connections and hands them round-robin to the workers).
 * A worker that dies after start-up is logged and replaced.
 */
export function startWorkerPool({ count, logger, restartDelayMs = 1000 }: WorkerPoolOptions): WorkerPool {
  /** Workers that have listened; those of them still alive are the serving ones. */
  const listened = new Set<number>();
  const exits: boolean[] = [];
  let started = false;
  let stopping = false;
  let settleListening: { resolve(port: number): void; reject(error: Error): void } | undefined;
  const listening = new Promise<number>((resolve, reject) => (settleListening = { resolve, reject }));
  /** By worker id: why a worker that reported it could not start. */
  const startupFailures = new Map<number, string>();

  const fork = (): void => {
    if (stopping) return;
    const worker = cluster.fork();
    logger.info({ workerId: worker.id, pid: worker.process.pid }, 'gateway worker started');
  };
  const live = (): Worker[] => Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker !== undefined && !worker.isDead());
  const serving = (): Worker[] => live().filter((worker) => listened.has(worker.id));
  cluster.on('listening', (worker, address) => {
    listened.add(worker.id);
    if (!started && serving().length === count) {
      started = true;
      settleListening!.resolve(address.port);
    }
  });
  cluster.on('message', (worker, message: unknown) => {
    if (isStartupFailure(message)) startupFailures.set(worker.id, message.gatewayStartupFailure);
  });
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      exits.push(code === 0 || (signal === 'SIGTERM' && !listened.has(worker.id)));
      return;
    }
    if (!started) {
      const failure = startupFailures.get(worker.id);
      settleListening!.reject(
        failure === undefined ? new Error(`worker ${worker.id} exited with ${signal ?? `code ${code}`} before it listened`) : new StartupError(failure),
      );
      return;
    }
    logger.error({ workerId: worker.id, pid: worker.process.pid, code, signal }, 'gateway worker exited; starting another');
    setTimeout(fork, restartDelayMs);
  });
  for (let index = 0; index < count; index += 1) fork();

  return {
    listening,
    serving,
    async stop() {
      stopping = true;
      const workers = live();
      await Promise.all(
        workers.map(
          (worker) =>
            new Promise<void>((resolve) => {
              worker.once('exit', () => resolve());
              worker.process.kill('SIGTERM');
            }),
        ),
      );
      return exits.every((clean) => clean);
    },
    kill() {
      for (const worker of live()) worker.process.kill('SIGKILL');
    },
  };
}
