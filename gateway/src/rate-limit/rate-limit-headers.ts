import type { RateLimitDecision, RateLimitPolicy, WindowState } from './rate-limiter';

/**
 * `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers-10): every window as
 * `"name";q=quota;w=seconds`. Built per request: a negligible share of a request's CPU, too little
 * to be worth a cache (docs/rate-limiter-design.md gives the figures).
 */
export function policyField(policy: RateLimitPolicy): string {
  return policy.windows.map((window) => `"${window.name}";q=${window.limit};w=${window.seconds}`).join(', ');
}

/** Whole seconds from `at` until `end`, rounded up and at least 1: never a fraction, never 0. */
export function secondsUntil(end: number, at: number): number {
  return Math.max(1, Math.ceil((end - at) / 1000));
}

/**
 * The window closest to exhaustion: the fewest requests left, and on a tie the one that ends last,
 * since that one keeps the client waiting longest. For a limited request that is the blocking one.
 */
export function closestToExhaustion(windows: readonly WindowState[]): WindowState {
  let closest = windows[0]!;
  for (const state of windows) if (state.remaining <= closest.remaining) closest = state;
  return closest;
}

/** The name of the entry that describes a ban in `RateLimit-Policy` and `RateLimit`. */
export const BAN_ENTRY = 'ban';

/**
 * The headers of a decision: the de facto `X-RateLimit-*` trio for the window closest to exhaustion
 * (Reset as a Unix time in seconds), the draft's `RateLimit-Policy` and `RateLimit` for every window,
 * and `Retry-After` when the request was refused.
 *
 * While a key is banned, no window decides: the ban does. `RateLimit-Policy` then adds a `"ban"`
 * entry, `q=0` (no request is served) for `w` = the ban's length, `RateLimit` reports only that
 * entry, `r=0` until the ban ends, and `X-RateLimit-*` describe the same entry: limit 0, nothing
 * remaining, reset when the ban ends. Nothing is counted in a window during a ban, so naming a
 * window there would report figures the limiter never read.
 */
export function rateLimitHeaders(decision: RateLimitDecision): Record<string, string> {
  const { at, policy } = decision;
  const headers: Record<string, string> = { 'RateLimit-Policy': policyField(policy) };
  if (decision.outcome === 'banned') {
    const bannedUntil = decision.bannedUntil!;
    const retryAfter = secondsUntil(bannedUntil, at);
    headers['RateLimit-Policy'] += `, "${BAN_ENTRY}";q=0;w=${policy.ban?.seconds ?? retryAfter}`;
    headers['X-RateLimit-Limit'] = '0';
    headers['X-RateLimit-Remaining'] = '0';
    headers['X-RateLimit-Reset'] = String(Math.ceil(bannedUntil / 1000));
    headers.RateLimit = `"${BAN_ENTRY}";r=0;t=${retryAfter}`;
    headers['Retry-After'] = String(retryAfter);
    return headers;
  }
  const closest = closestToExhaustion(decision.windows);
  headers['X-RateLimit-Limit'] = String(closest.window.limit);
  headers['X-RateLimit-Remaining'] = String(closest.remaining);
  headers['X-RateLimit-Reset'] = String(Math.ceil(closest.resetAt / 1000));
  headers.RateLimit = decision.windows
    .map((state) => `"${state.window.name}";r=${state.remaining};t=${secondsUntil(state.resetAt, at)}`)
    .join(', ');
  if (decision.blocking !== undefined) headers['Retry-After'] = String(secondsUntil(decision.blocking.resetAt, at));
  return headers;
}
