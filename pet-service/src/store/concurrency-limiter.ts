import { status as Status } from '@grpc/grpc-js';
import { PetServiceError } from '../pets/pet-service-error';

/** Settings for {@link createConcurrencyLimiter}. */
export interface ConcurrencyLimits {
  /** Operations that run at once. */
  readonly maxConcurrent: number;
  /** Operations that wait for a turn, first come first served; one more is refused at once. */
  readonly maxQueued: number;
  /**
   * How long an operation may take once it runs (the store's timeout): a waiting operation gives
   * up while its caller's deadline still leaves this much time.
   */
  readonly operationTimeMs: number;
  /** What the limiter admits, as its refusals name it: `read`, `write`. */
  readonly kind: string;
}

/** The caller of an operation; a gRPC server call is one. */
export interface LimitedCaller {
  readonly cancelled: boolean;
  /** A Date, or milliseconds since the epoch; Infinity for none. */
  getDeadline(): Date | number;
  once(event: 'cancelled', listener: () => void): unknown;
  removeListener(event: 'cancelled', listener: () => void): unknown;
}

/** A semaphore with a bounded queue, in front of one kind of store operation. */
export interface ConcurrencyLimiter {
  /**
   * Runs `operation` when its turn comes. Fails with RESOURCE_EXHAUSTED at once when the queue is
   * full, and when waiting for the turn would leave the operation less than `operationTimeMs`
   * before its caller's deadline. An operation whose caller cancels while it waits leaves the
   * queue (CANCELLED) and never runs.
   */
  run<T>(operation: () => Promise<T>, caller?: LimitedCaller): Promise<T>;
  /** Operations waiting for a turn now. */
  readonly queued: number;
  /** Operations running now. */
  readonly running: number;
}

// setTimeout fires at once for longer delays; a wait that long is as good as no deadline.
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Bounds the operations of one kind that one replica sends to the store. Past what the store
 * absorbs, more concurrent operations only make each one slower, until all of them time out
 * together (on FerretDB, a handful of concurrent creates already outlive the store timeout, and
 * reads queue behind one another: docs/mongodb.md). Bounded, the excess is refused with
 * RESOURCE_EXHAUSTED, which the gateway answers with 503 and `Retry-After`, while the caller is
 * still waiting for an answer, and the operations let through finish in time. The refusal tells
 * gRPC clients not to retry it (PetServiceError.overCapacity): a retry would only add to the
 * load it was refused for.
 */
export function createConcurrencyLimiter({ maxConcurrent, maxQueued, operationTimeMs, kind }: ConcurrencyLimits): ConcurrencyLimiter {
  let running = 0;
  // A Set keeps insertion order and lets a waiter leave from anywhere in O(1).
  const waiting = new Set<() => void>();
  const overCapacity = (): PetServiceError => PetServiceError.overCapacity(`pet store is at its ${kind} capacity`);
  const release = (): void => {
    const next = waiting.values().next();
    if (next.done === true) running -= 1;
    else next.value(); // the slot passes to the next operation, so `running` stays
  };
  const turn = (caller: LimitedCaller | undefined): Promise<void> => {
    const patience = caller === undefined ? Infinity : Number(caller.getDeadline()) - operationTimeMs - Date.now();
    if (patience <= 0) return Promise.reject(overCapacity());
    return new Promise((resolve, reject) => {
      const leave = (): void => {
        waiting.delete(go);
        clearTimeout(timer);
        caller?.removeListener('cancelled', cancel);
      };
      const go = (): void => {
        leave();
        resolve();
      };
      const cancel = (): void => {
        leave();
        reject(new PetServiceError(Status.CANCELLED, `cancelled while waiting to ${kind}`));
      };
      const timer = patience <= MAX_TIMER_MS
        ? setTimeout(() => {
            leave();
            reject(overCapacity());
          }, patience)
        : undefined;
      waiting.add(go);
      caller?.once('cancelled', cancel);
    });
  };

  return {
    async run(operation, caller) {
      if (caller?.cancelled === true) throw new PetServiceError(Status.CANCELLED, `cancelled before its turn to ${kind}`);
      if (running < maxConcurrent) running += 1;
      else if (waiting.size >= maxQueued) throw overCapacity();
      else await turn(caller);
      try {
        return await operation();
      } finally {
        release();
      }
    },
    get queued() {
      return waiting.size;
    },
    get running() {
      return running;
    },
  };
}
