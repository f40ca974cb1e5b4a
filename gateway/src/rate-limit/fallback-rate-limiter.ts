import { withinDeadline } from '@petstore/runtime';
import { splitPolicy } from './rate-limit-policy';
import type { RateLimitDecision, RateLimiter, RateLimitPolicy, RateLimitUsage } from './rate-limiter';

/** A store that can tell, without a round trip, whether a call would fail at once. */
export interface SharedRateLimiter extends RateLimiter {
  readonly available: boolean;
}

/** A state change worth one log line. */
export interface FallbackEvent {
  readonly msg: string;
  /** Whether requests are counted in memory from now on. */
  readonly usingFallback: boolean;
  readonly error?: string;
}

export interface FallbackRateLimiterOptions {
  readonly primary: SharedRateLimiter;
  readonly fallback: RateLimiter;
  readonly log: (event: FallbackEvent) => void;
  /**
   * Told of every error of the shared store (the log has only the first of an outage), so that one
   * that waiting will not fix can be told from an outage and counted.
   */
  readonly onError?: (error: Error) => void;
  /**
   * After a failed call, how long requests skip the primary: a hanging Redis keeps its connection
   * "ready", and without this pause every request would wait out the command timeout. Default 1000.
   */
  readonly pauseAfterErrorMs?: number;
  /** A monotonic clock in ms, for that pause only. Default `performance.now`. */
  readonly monotonicNow?: () => number;
  /**
   * The longest a request waits for the shared store (REDIS_COMMAND_TIMEOUT_MS): past it, the
   * request is counted in memory as after an error. The client's own command timeout does not
   * bound the wait on a Cluster: a command to a node that went away is retried every 100 ms
   * while the client refreshes its slot map, up to 16 times (ioredis's `retryDelayOnFailover`,
   * `maxRedirections`), each try timed afresh. Absent: no bound of its own.
   */
  readonly deadlineMs?: number;
  /**
   * How many processes count apart while the shared store is out (read on every request counted
   * in memory; `ReplicaHeartbeat.replicas`): each then enforces ⌈limit ÷ that⌉ of every
   * window ({@link splitPolicy}), so that together they keep about the shared limit. Absent: each
   * enforces the whole limit (RATE_LIMIT_FALLBACK=full).
   */
  readonly replicas?: () => number;
}

/** A policy as split for one count of processes. */
interface Split {
  readonly replicas: number;
  readonly policy: RateLimitPolicy;
}

/**
 * Uses the shared store while it works and the in-memory one while it does not, so a Redis outage
 * costs exactness across replicas, never availability: no request fails or waits on Redis. Logs the
 * switch each way once, and switches back by itself when the connection is ready again. In memory,
 * each process enforces its share of every limit (see {@link FallbackRateLimiterOptions.replicas}),
 * and the decisions carry the policy in force, so the headers show the limit this process applies.
 *
 * Not rate-limiter-flexible's `insuranceLimiter`: that sends every request to a hung Redis first
 * (rate-limiter-flexible-limits.test.ts), reports no switch to log or count, and would have to be
 * a limiter of the library's one-count results, which cannot carry the key policy's two windows.
 */
export class FallbackRateLimiter implements RateLimiter {
  private readonly primary: SharedRateLimiter;
  private readonly fallback: RateLimiter;
  private readonly log: (event: FallbackEvent) => void;
  private readonly onError: (error: Error) => void;
  private readonly pauseAfterErrorMs: number;
  private readonly monotonicNow: () => number;
  private readonly replicas: () => number;
  private readonly deadlineMs: number | undefined;
  /** By the policy the caller passed: callers keep theirs (one per key), so this stays small. */
  private readonly splits = new WeakMap<RateLimitPolicy, Split>();
  private degraded = false;
  private pausedUntil = 0;

  constructor(options: FallbackRateLimiterOptions) {
    this.primary = options.primary;
    this.fallback = options.fallback;
    this.log = options.log;
    this.onError = options.onError ?? (() => undefined);
    this.pauseAfterErrorMs = options.pauseAfterErrorMs ?? 1000;
    this.monotonicNow = options.monotonicNow ?? (() => performance.now());
    this.replicas = options.replicas ?? (() => 1);
    this.deadlineMs = options.deadlineMs;
  }

  /** Whether requests are currently counted in memory. */
  get usingFallback(): boolean {
    return this.degraded;
  }

  async consume(subject: string, policy: RateLimitPolicy): Promise<RateLimitDecision> {
    if (!this.primary.available) {
      this.degrade('not connected');
    } else if (this.monotonicNow() >= this.pausedUntil) {
      try {
        const decision = await this.inTime(this.primary.consume(subject, policy));
        this.recover();
        return decision;
      } catch (error) {
        this.pausedUntil = this.monotonicNow() + this.pauseAfterErrorMs;
        this.onError(error as Error);
        this.degrade((error as Error).message);
      }
    }
    return this.fallback.consume(subject, this.inForce(policy));
  }

  /**
   * The shared store's figures while it answers; else this replica's, as requests are counted
   * meanwhile, against this replica's share of the limits (the result's `scope` says which).
   * Reading changes no state: an error here neither pauses the shared store nor is logged as an
   * outage.
   */
  async usage(subject: string, policy: RateLimitPolicy): Promise<RateLimitUsage> {
    if (this.primary.available && this.monotonicNow() >= this.pausedUntil) {
      try {
        return await this.inTime(this.primary.usage(subject, policy));
      } catch {
        // Answered below from the counts requests fall back to.
      }
    }
    return this.fallback.usage(subject, this.inForce(policy));
  }

  /** `work`, or a rejection once it has taken longer than {@link FallbackRateLimiterOptions.deadlineMs}. */
  private inTime<T>(work: Promise<T>): Promise<T> {
    const { deadlineMs } = this;
    // A late answer settles nothing: the request was already counted in memory.
    return deadlineMs === undefined ? work : withinDeadline(work, deadlineMs, () => new Error(`Redis did not answer within ${deadlineMs} ms`));
  }

  /** `policy` as this process enforces it while counting in memory. */
  private inForce(policy: RateLimitPolicy): RateLimitPolicy {
    const replicas = this.replicas();
    if (replicas <= 1) return policy;
    let split = this.splits.get(policy);
    if (split?.replicas !== replicas) {
      split = { replicas, policy: splitPolicy(policy, replicas) };
      this.splits.set(policy, split);
    }
    return split.policy;
  }

  /** Lifts the ban in both stores; fails if the shared one cannot be reached. */
  async unban(subject: string): Promise<boolean> {
    const local = await this.fallback.unban(subject);
    const shared = await this.primary.unban(subject);
    return local || shared;
  }

  async close(): Promise<void> {
    await Promise.all([this.primary.close(), this.fallback.close()]);
  }

  private degrade(reason: string): void {
    if (this.degraded) return;
    this.degraded = true;
    this.log({ msg: 'rate limiter: Redis unavailable, counting in memory on this replica', usingFallback: true, error: reason });
  }

  private recover(): void {
    if (!this.degraded) return;
    this.degraded = false;
    this.log({ msg: 'rate limiter: Redis is back, counting in Redis again', usingFallback: false });
  }
}
