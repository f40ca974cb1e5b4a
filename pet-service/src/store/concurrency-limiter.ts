import { status as Status } from '@grpc/grpc-js';
import { PetServiceError } from '../pets/pet-service-error';

/** Settings for {@link createConcurrencyLimiter}. */
export interface ConcurrencyLimits {
  /** Operations that run at once, at most. */
  readonly maxConcurrent: number;
  /** Operations that wait for a turn, first come first served; one more is refused at once. */
  readonly maxQueued: number;
  /**
   * How long an operation may take once it runs (the store's timeout): a waiting operation gives
   * up while its caller's deadline still leaves this much time, and an operation slower than a
   * half of it says the store has more at once than it serves well. 0: no deadline is kept
   * and the bound never shrinks (the in-process store).
   */
  readonly operationTimeMs: number;
  /** What the limiter admits, as its refusals name it: `read`, `write`. */
  readonly kind: string;
  /** Milliseconds since the epoch (tests; unset: `Date.now`). */
  readonly now?: () => number;
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
   * before its caller's deadline: already, or by {@link WAIT_MARGIN} times the wait the queue
   * ahead of it can be expected to take (the operations' recent average time). An operation whose caller cancels while it
   * waits leaves the queue (CANCELLED) and never runs.
   */
  run<T>(operation: () => Promise<T>, caller?: LimitedCaller): Promise<T>;
  /** Operations waiting for a turn now. */
  readonly queued: number;
  /** Operations running now. */
  readonly running: number;
  /** Operations allowed to run at once now: `maxConcurrent`, or fewer while the store is slow. */
  readonly limit: number;
}

// setTimeout fires at once for longer delays; a wait that long is as good as no deadline.
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Weight of the latest operation in the running average of their times. */
const AVERAGE_WEIGHT = 0.2;
/** An operation slower than this share of `operationTimeMs` shrinks the bound. */
const SLOW_SHARE = 0.5;
/** What a slow operation leaves of the bound. */
const DECREASE = 0.9;
/**
 * How much longer than the estimate a wait may turn out: the estimate is an average, the bound
 * it divides by moves, and a wait that outlasts its caller's patience ends in a slow refusal.
 */
const WAIT_MARGIN = 4;

/**
 * Bounds the operations of one kind that one replica sends to the store. Past what the store
 * absorbs, more concurrent operations only make each one slower, until all of them time out
 * together (on FerretDB, a handful of concurrent creates already outlive the store timeout, and
 * reads queue behind one another: docs/mongodb.md). Bounded, the excess is refused with
 * RESOURCE_EXHAUSTED, which the gateway answers with 503 and `Retry-After`, while the caller is
 * still waiting for an answer, and the operations let through finish in time. The refusal tells
 * gRPC clients not to retry it (PetServiceError.overCapacity): a retry would only add to the
 * load it was refused for.
 *
 * How many run at once adapts to the store, as TCP's window adapts to a link (additive increase,
 * multiplicative decrease, as Netflix's concurrency-limits AIMD does on latency): each operation
 * slower than half the store timeout takes a tenth off the bound, each faster one adds
 * 1/bound, between 1 and `maxConcurrent`. A store that serves everything fast (MongoDB on an
 * index) keeps the whole bound; one that answers slower the more it is given (FerretDB's SQLite
 * handler, which works on one query at a time) gets only what it serves in time.
 */
export function createConcurrencyLimiter({ maxConcurrent, maxQueued, operationTimeMs, kind, now = Date.now }: ConcurrencyLimits): ConcurrencyLimiter {
  const slowMs = operationTimeMs > 0 ? operationTimeMs * SLOW_SHARE : Infinity;
  let limit = maxConcurrent;
  let running = 0;
  // How long an operation runs, on average lately: what a place in the queue costs in waiting.
  let averageMs = 0;
  // A Set keeps insertion order and lets a waiter leave from anywhere in O(1).
  const waiting = new Set<() => void>();
  const overCapacity = (): PetServiceError => PetServiceError.overCapacity(`pet store is at its ${kind} capacity`);
  const finished = (ms: number): void => {
    averageMs += (ms - averageMs) * AVERAGE_WEIGHT;
    limit = ms > slowMs ? Math.max(1, limit * DECREASE) : Math.min(maxConcurrent, limit + 1 / limit);
    running -= 1;
    // The next in line take the slots the bound now allows (none while it shrinks below `running`).
    while (running < Math.floor(limit) && waiting.size > 0) {
      running += 1;
      waiting.values().next().value!();
    }
  };
  const turn = (caller: LimitedCaller | undefined): Promise<void> => {
    const patience = caller === undefined ? Infinity : Number(caller.getDeadline()) - operationTimeMs - now();
    // Refused now rather than after waiting for nothing: a refusal is only cheap while it is fast.
    const expectedWaitMs = ((waiting.size + 1) / Math.floor(limit)) * averageMs;
    if (patience <= expectedWaitMs * WAIT_MARGIN) return Promise.reject(overCapacity());
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
      // The slot is taken here, or handed over by `finished` before the turn resolves.
      if (running < Math.floor(limit) && waiting.size === 0) running += 1;
      else if (waiting.size >= maxQueued) throw overCapacity();
      else await turn(caller);
      const started = now();
      try {
        return await operation();
      } finally {
        finished(now() - started);
      }
    },
    get queued() {
      return waiting.size;
    },
    get running() {
      return running;
    },
    get limit() {
      return Math.floor(limit);
    },
  };
}
