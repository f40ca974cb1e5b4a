import { type RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { counterKeyPrefix, decide, type RateLimitDecision, type RateLimitPolicy, windowIndex } from './rate-limiter';

/**
 * Whether `policy` is one window and no ban (the per-IP bucket): exactly what one
 * rate-limiter-flexible limiter counts. Every other policy needs the gateway's own store; see
 * docs/rate-limiter.md.
 */
export function isSingleWindow(policy: RateLimitPolicy): boolean {
  return policy.ban === undefined && policy.windows.length === 1;
}

/** Builds the library limiter (memory or Redis) for `points` per counter living `seconds`. */
export type LibraryLimiterFactory = (points: number, seconds: number) => RateLimiterAbstract;

/** Counts {@link isSingleWindow} policies. */
export interface WindowBucket {
  /** Errors of the store are thrown, not hidden: the fallback limiter decides what to do. */
  consume(subject: string, policy: RateLimitPolicy, now: number): Promise<RateLimitDecision>;
}

/** Counters outlive their window by this much, so a replica whose clock lags a little still finds them. */
const EXPIRY_SLACK_SECONDS = 60;

/**
 * A one-window policy counted by rate-limiter-flexible, one limiter per limit. The library starts a
 * window at a key's first request; naming the key after the window's index instead
 * (`{rl:<subject>}:<window>:<n>`, as the gateway's own store names its counters) keeps it aligned to the epoch, so X-RateLimit-Reset is the end of
 * the UTC minute on every replica, and the library's expiry only reclaims the counter afterwards.
 * The library also counts a rejected request; with one window that count lands above the limit,
 * where nothing reads it.
 */
export function createWindowBucket(create: LibraryLimiterFactory): WindowBucket {
  const limiters = new Map<string, RateLimiterAbstract>();
  return {
    async consume(subject, policy, now) {
      const window = policy.windows[0]!;
      const id = `${window.limit}/${window.seconds}`;
      let limiter = limiters.get(id);
      if (limiter === undefined) {
        limiter = create(window.limit, window.seconds + EXPIRY_SLACK_SECONDS);
        limiters.set(id, limiter);
      }
      try {
        const result = await limiter.consume(`${counterKeyPrefix(subject)}:${window.name}:${windowIndex(window, now)}`);
        return decide(policy, now, [result.consumedPoints], undefined);
      } catch (rejection) {
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
        return decide(policy, now, [window.limit], 0);
      }
    },
  };
}
