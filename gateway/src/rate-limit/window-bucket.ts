import { type RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import {
  counterKey,
  decide,
  type RateLimitDecision,
  type RateLimitPolicy,
  type RateLimitWindow,
  windowEnd,
  windowIndex,
} from './rate-limiter';

/**
 * Whether `policy` is one window and no ban (the per-IP bucket): exactly what one
 * rate-limiter-flexible limiter counts. Every other policy needs the gateway's own store; see
 * docs/rate-limiter-design.md.
 */
export function isSingleWindow(policy: RateLimitPolicy): boolean {
  return policy.ban === undefined && policy.windows.length === 1;
}

export interface WindowBucketOptions {
  /**
   * Builds the library limiter (memory or Redis) allowing `points` per counter. Each request sets
   * its counter's expiry itself; `seconds`, the longest it can be, is only the library's default.
   */
  readonly create: (points: number, seconds: number) => RateLimiterAbstract;
  /**
   * How long a counter outlives the end of its window: with Redis a minute, so a replica whose
   * clock lags a little still finds it; in memory 0, since one clock reads it.
   */
  readonly expirySlackSeconds: number;
  /**
   * Most subjects counted apart in one window; every further subject shares one overflow counter
   * until the window ends. Bounds the memory store, where each counter costs heap and a timer,
   * against a flood of distinct addresses. Default: no bound.
   */
  readonly maxSubjects?: number;
}

/** Counts {@link isSingleWindow} policies. */
export interface WindowBucket {
  /** Errors of the store are thrown, not hidden: the fallback limiter decides what to do. */
  consume(subject: string, policy: RateLimitPolicy, now: number): Promise<RateLimitDecision>;
  /** Subjects counted apart in the window containing `now`, the overflow counter included; 0 without `maxSubjects`. */
  subjects(now: number): number;
}

/** Shared by the subjects beyond `maxSubjects`; no client address reads like this. */
export const OVERFLOW_SUBJECT = 'ip:overflow';

interface Limit {
  readonly limiter: RateLimiterAbstract;
  readonly window: RateLimitWindow;
  /** The window {@link Limit.subjects} belong to. */
  index: number;
  subjects: Set<string>;
}

/**
 * A one-window policy counted by rate-limiter-flexible, one limiter per limit. The library starts a
 * window at a key's first request; naming the key after the window's index instead
 * (`{rl:<subject>}:<window>:<n>`, as the gateway's own store names its counters) keeps it aligned to the epoch, so X-RateLimit-Reset is the end of
 * the UTC minute on every replica, and each counter expires at the end of its window plus the slack.
 * The library also counts a rejected request; with one window that count lands above the limit,
 * where nothing reads it.
 */
export function createWindowBucket(options: WindowBucketOptions): WindowBucket {
  const { create, expirySlackSeconds, maxSubjects } = options;
  const limits = new Map<string, Limit>();
  const admit = (limit: Limit, subject: string, index: number): string => {
    if (maxSubjects === undefined) return subject;
    if (limit.index !== index) {
      limit.index = index;
      limit.subjects = new Set();
    }
    const admitted = limit.subjects.has(subject) || limit.subjects.size < maxSubjects ? subject : OVERFLOW_SUBJECT;
    limit.subjects.add(admitted);
    return admitted;
  };
  return {
    async consume(subject, policy, now) {
      const window = policy.windows[0]!;
      const id = `${window.limit}/${window.seconds}`;
      let limit = limits.get(id);
      if (limit === undefined) {
        limit = { limiter: create(window.limit, window.seconds + expirySlackSeconds), window, index: -1, subjects: new Set() };
        limits.set(id, limit);
      }
      const index = windowIndex(window, now);
      const key = counterKey(admit(limit, subject, index), window, index);
      // Whole seconds: the Redis store turns them into PX milliseconds, which must be an integer.
      const customDuration = Math.ceil((windowEnd(window, now) - now) / 1000) + expirySlackSeconds;
      try {
        const result = await limit.limiter.consume(key, 1, { customDuration });
        return decide(policy, now, [result.consumedPoints], undefined);
      } catch (rejection) {
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
        return decide(policy, now, [window.limit], 0);
      }
    },
    subjects(now) {
      let count = 0;
      for (const limit of limits.values()) {
        if (limit.index === windowIndex(limit.window, now)) count += limit.subjects.size;
      }
      return count;
    },
  };
}
