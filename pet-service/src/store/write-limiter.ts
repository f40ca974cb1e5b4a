import { status as Status } from '@grpc/grpc-js';
import { PetServiceError } from '../pets/pet-service-error';

/** Settings for {@link createWriteLimiter}. */
export interface WriteLimits {
  /** Writes that run at once. */
  readonly maxConcurrent: number;
  /** Writes that wait for a turn, first come first served; one more is refused at once. */
  readonly maxQueued: number;
  /**
   * How long a write may take once it runs (the store's timeout): a waiting write gives up while
   * its caller's deadline still leaves this much time.
   */
  readonly writeTimeMs: number;
}

/** The caller of a write; a gRPC server call is one. */
export interface WriteCaller {
  readonly cancelled: boolean;
  /** A Date, or milliseconds since the epoch; Infinity for none. */
  getDeadline(): Date | number;
  once(event: 'cancelled', listener: () => void): unknown;
  removeListener(event: 'cancelled', listener: () => void): unknown;
}

/** A semaphore with a bounded queue, in front of the store's writes. */
export interface WriteLimiter {
  /**
   * Runs `write` when its turn comes. Fails with RESOURCE_EXHAUSTED at once when the queue is
   * full, and when waiting for the turn would leave the write less than `writeTimeMs` before its
   * caller's deadline. A write whose caller cancels while it waits leaves the queue (CANCELLED)
   * and never runs.
   */
  run<T>(write: () => Promise<T>, caller?: WriteCaller): Promise<T>;
  /** Writes waiting for a turn now. */
  readonly queued: number;
  /** Writes running now. */
  readonly running: number;
}

// setTimeout fires at once for longer delays; a wait that long is as good as no deadline.
const MAX_TIMER_MS = 2 ** 31 - 1;

const overCapacity = (): PetServiceError => new PetServiceError(Status.RESOURCE_EXHAUSTED, 'pet store is at its write capacity');

/**
 * Bounds the writes one replica sends to the store. Past what the store absorbs, more concurrent
 * writes only make each one slower, until all of them time out together (on FerretDB, a handful
 * of concurrent creates already outlive the store timeout: docs/mongodb.md). Bounded, the excess is
 * refused with RESOURCE_EXHAUSTED, which the gateway answers with 429 and `Retry-After`, while
 * the caller is still waiting for an answer, and the writes let through finish in time.
 */
export function createWriteLimiter({ maxConcurrent, maxQueued, writeTimeMs }: WriteLimits): WriteLimiter {
  let running = 0;
  // A Set keeps insertion order and lets a waiter leave from anywhere in O(1).
  const waiting = new Set<() => void>();
  const release = (): void => {
    const next = waiting.values().next();
    if (next.done === true) running -= 1;
    else next.value(); // the slot passes to the next writer, so `running` stays
  };
  const turn = (caller: WriteCaller | undefined): Promise<void> => {
    const patience = caller === undefined ? Infinity : Number(caller.getDeadline()) - writeTimeMs - Date.now();
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
        reject(new PetServiceError(Status.CANCELLED, 'cancelled while waiting to write'));
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
    async run(write, caller) {
      if (caller?.cancelled === true) throw new PetServiceError(Status.CANCELLED, 'cancelled before writing');
      if (running < maxConcurrent) running += 1;
      else if (waiting.size >= maxQueued) throw overCapacity();
      else await turn(caller);
      try {
        return await write();
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
