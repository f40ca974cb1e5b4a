/**
 * One fixed window of a policy. Windows are aligned to the Unix epoch, so a 60 s window is the UTC
 * minute and an 86 400 s window the UTC day, and every replica agrees on where a window ends.
 */
export interface RateLimitWindow {
  /** Names the window in the `RateLimit` and `RateLimit-Policy` fields, e.g. `minute`. */
  readonly name: string;
  /** Requests allowed per window. */
  readonly limit: number;
  readonly seconds: number;
}

/** The temporary ban that follows persistent requests while limited. */
export interface BanPolicy {
  /** Rejected requests tolerated within one blocked window; the next one bans. */
  readonly threshold: number;
  readonly seconds: number;
}

/** What a subject (an API key, or a client IP) may do. */
export interface RateLimitPolicy {
  /** Shortest first. A request needs room in every one of them. */
  readonly windows: readonly RateLimitWindow[];
  /** Absent: never banned (the per-IP bucket, which may be shared behind NAT). */
  readonly ban?: BanPolicy;
}

/** One window as a decision left it. */
export interface WindowState {
  readonly window: RateLimitWindow;
  /** Requests left in this window after the decision. */
  readonly remaining: number;
  /** End of the window, ms since the epoch. */
  readonly resetAt: number;
}

export type RateLimitOutcome = 'allowed' | 'limited' | 'banned';

/** The answer to one request. A request that is not `allowed` consumed nothing. */
export interface RateLimitDecision {
  readonly outcome: RateLimitOutcome;
  /** The clock reading the decision was made at, ms since the epoch. */
  readonly at: number;
  readonly policy: RateLimitPolicy;
  /** In policy order. */
  readonly windows: readonly WindowState[];
  /** For `limited`: the full window with the latest end, which is the one a retry must outwait. */
  readonly blocking?: WindowState;
  /** For `banned`: when the ban ends, ms since the epoch. */
  readonly bannedUntil?: number;
}

/** One window as a subject has used it so far. */
export interface WindowUsage {
  readonly window: RateLimitWindow;
  /** Requests admitted in the current window (refused ones are never counted). */
  readonly used: number;
  /** Requests still allowed in it: the limit less `used`, never below 0. */
  readonly remaining: number;
  /** End of the window, ms since the epoch, when `used` starts again from 0. */
  readonly resetAt: number;
}

/**
 * Where the figures of a {@link RateLimitUsage} come from: `shared`, the counters every replica
 * spends (Redis); `replica`, this process's own, which other replicas do not see.
 */
export type UsageScope = 'shared' | 'replica';

/** What a subject has used of a key policy, read without spending anything. */
export interface RateLimitUsage {
  readonly scope: UsageScope;
  /** The clock reading the figures were taken at, ms since the epoch. */
  readonly at: number;
  /** In policy order. */
  readonly windows: readonly WindowUsage[];
  /** While banned: when the ban ends, ms since the epoch. */
  readonly bannedUntil?: number;
}

/**
 * Counts requests per subject in every window of a policy, atomically: a request is allowed only
 * when all windows have room, and only then is it counted in all of them.
 */
export interface RateLimiter {
  consume(subject: string, policy: RateLimitPolicy): Promise<RateLimitDecision>;
  /**
   * What `subject` has used of a key policy (two windows and a ban, as `keyPolicy` builds), read
   * from the counters `consume` writes without counting, striking or banning anything. The per-IP
   * bucket is not reported.
   */
  usage(subject: string, policy: RateLimitPolicy): Promise<RateLimitUsage>;
  /** Lifts a ban. Resolves to whether a ban was in force. */
  unban(subject: string): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * Every counter key of a subject, in either store, starts with this; in Redis it is a hash tag, so
 * one Redis Cluster slot holds all of a subject's keys.
 */
export function counterKeyPrefix(subject: string): string {
  return `{rl:${subject}}`;
}

/** The counter of `window` at index `index` (see {@link windowIndex}), in either store. */
export function counterKey(subject: string, window: RateLimitWindow, index: number): string {
  return `${counterKeyPrefix(subject)}:${window.name}:${index}`;
}

/** Usage figures from each window's count in the window containing `now`. */
export function usageOf(
  scope: UsageScope,
  policy: RateLimitPolicy,
  now: number,
  counts: readonly number[],
  bannedUntil: number | undefined,
): RateLimitUsage {
  const windows = policy.windows.map((window, index) => {
    const used = counts[index] ?? 0;
    return { window, used, remaining: Math.max(0, window.limit - used), resetAt: windowEnd(window, now) };
  });
  return bannedUntil !== undefined && bannedUntil > now ? { scope, at: now, windows, bannedUntil } : { scope, at: now, windows };
}

/** Index of the window that contains `now`. */
export function windowIndex(window: RateLimitWindow, now: number): number {
  return Math.floor(now / (window.seconds * 1000));
}

/** End of the window that contains `now`, ms since the epoch. */
export function windowEnd(window: RateLimitWindow, now: number): number {
  return (windowIndex(window, now) + 1) * window.seconds * 1000;
}

/**
 * Builds a decision from the counts each window holds after it (both stores report the same
 * figures, so they share this). `blocking` is the index of the window that rejected.
 */
export function decide(
  policy: RateLimitPolicy,
  now: number,
  counts: readonly number[],
  blocking: number | undefined,
): RateLimitDecision {
  const windows = policy.windows.map((window, index) => ({
    window,
    remaining: Math.max(0, window.limit - (counts[index] ?? 0)),
    resetAt: windowEnd(window, now),
  }));
  if (blocking === undefined) return { outcome: 'allowed', at: now, policy, windows };
  return { outcome: 'limited', at: now, policy, windows, blocking: windows[blocking] };
}

/** A decision for a banned subject. Nothing was counted, so every window reports no room. */
export function banned(policy: RateLimitPolicy, now: number, bannedUntil: number): RateLimitDecision {
  const windows = policy.windows.map((window) => ({ window, remaining: 0, resetAt: windowEnd(window, now) }));
  return { outcome: 'banned', at: now, policy, windows, bannedUntil };
}

/**
 * Among the windows whose count has reached its limit, the one that ends last (the windows are
 * shortest first, so that is the last full one): retrying before it ends is pointless.
 */
export function blockingWindow(policy: RateLimitPolicy, counts: readonly number[]): number | undefined {
  for (let index = policy.windows.length - 1; index >= 0; index -= 1) {
    if ((counts[index] ?? 0) >= policy.windows[index]!.limit) return index;
  }
  return undefined;
}
