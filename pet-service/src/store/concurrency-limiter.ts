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
   * up while its caller's deadline still leaves this much time, and no more run at once than are
   * expected to end within a quarter of it. 0: no deadline is kept and the bound never shrinks (the
   * in-process store).
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
/** Weight of the latest operation in the running average of the store's time per operation. */
const AVERAGE_WEIGHT = 0.2;
/**
 * The share of `operationTimeMs` an operation may be expected to take. The rest is margin: for
 * the other replicas sending the same store their own operations, each counting on the store's
 * time as it measured it alone, and for an estimate that follows the store a few operations late.
 */
const EXPECTED_SHARE = 0.25;
/**
 * How much longer than the estimate a wait may turn out: the estimate is an average, the bound
 * moves, and a wait that outlasts its caller's patience ends in a slow refusal.
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
 * How many run at once follows the store's time per operation: while it has operations, how long
 * it takes to end each one (the inverse of its throughput, which Little's law turns into a
 * latency: an operation with n ahead of it ends about n times that later). A store that serves
 * one query at a time, as FerretDB's SQLite handler does, shows its whole time per query however
 * many it is sent; one that serves them side by side, as MongoDB on an index does, shows that
 * time shared among them. One more starts only while that time, times the operations then
 * running with it, fits in a quarter of the store timeout (at most `maxConcurrent`, at least one): a
 * burst is held in the queue, or refused, before it reaches the store, rather than started all
 * at once to time out there together. A wait in the queue takes the same time per operation for
 * every place ahead of it.
 */
export function createConcurrencyLimiter({ maxConcurrent, maxQueued, operationTimeMs, kind, now = Date.now }: ConcurrencyLimits): ConcurrencyLimiter {
  const expectedMs = operationTimeMs > 0 ? operationTimeMs * EXPECTED_SHARE : Infinity;
  let running = 0;
  // The store's time per operation, on average lately: how long, while it had operations, it
  // took to end each one. Since when it has had some, and when it last ended one.
  let storeMsPerOperation = 0;
  let busySince = 0;
  let lastEnd = 0;
  // Operations that may run at once: those whose store time adds up to the expected duration.
  const allowed = (): number =>
    storeMsPerOperation > 0 ? Math.min(maxConcurrent, Math.max(1, Math.floor(expectedMs / storeMsPerOperation))) : maxConcurrent;
  // A Set keeps insertion order and lets a waiter leave from anywhere in O(1).
  const waiting = new Set<() => void>();
  const overCapacity = (): PetServiceError => PetServiceError.overCapacity(`pet store is at its ${kind} capacity`);
  const start = (): void => {
    if (running === 0) busySince = now();
    running += 1;
  };
  const finished = (): void => {
    const at = now();
    // Past the store timeout an operation has failed; it says no more of the store than that.
    const sample = Math.min(at - Math.max(lastEnd, busySince), operationTimeMs > 0 ? operationTimeMs : Infinity);
    lastEnd = at;
    // From nothing, as if the store were fast: a replica's first operations are its slowest (new
    // connections, code not yet optimised), and one alone must not hold every later one back.
    storeMsPerOperation += (sample - storeMsPerOperation) * AVERAGE_WEIGHT;
    running -= 1;
    // The next in line take the slots now allowed (none while fewer are allowed than run).
    while (running < allowed() && waiting.size > 0) {
      start();
      waiting.values().next().value!();
    }
  };
  const turn = (caller: LimitedCaller | undefined): Promise<void> => {
    const patience = caller === undefined ? Infinity : Number(caller.getDeadline()) - operationTimeMs - now();
    // Refused now rather than after waiting for nothing: a refusal is only cheap while it is fast.
    const expectedWaitMs = (waiting.size + 1) * storeMsPerOperation;
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
      if (running < allowed() && waiting.size === 0) start();
      else if (waiting.size >= maxQueued) throw overCapacity();
      else await turn(caller);
      try {
        return await operation();
      } finally {
        finished();
      }
    },
    get queued() {
      return waiting.size;
    },
    get running() {
      return running;
    },
    get limit() {
      return allowed();
    },
  };
}
