/** How a call retries: capped exponential backoff with full jitter, within a total budget. */
export interface RetryOptions {
  /** The first backoff's ceiling; attempt n waits a random time below `baseDelayMs * 2^n`. Default 250. */
  readonly baseDelayMs: number;
  /** The cap on that ceiling. Default 10,000. */
  readonly maxDelayMs: number;
  /**
   * How long one call may take, waits included, before it gives up with the last error instead of
   * waiting again. Default 70,000: enough to sit out a minute window's `Retry-After`.
   */
  readonly budgetMs: number;
}

export const DEFAULT_RETRY_OPTIONS: RetryOptions = Object.freeze({ baseDelayMs: 250, maxDelayMs: 10_000, budgetMs: 70_000 });

/**
 * The wait before retry number `retry` (0 for the first): `floor` (a `Retry-After`, which the
 * server's window makes a hard minimum) plus a full-jitter backoff, `random() * min(cap, base * 2^retry)`.
 * The jitter on top of `Retry-After` spreads clients that were refused together, so they do not
 * all return at the instant the window opens.
 */
export function retryDelayMs(options: RetryOptions, retry: number, random: () => number, floorMs = 0): number {
  const ceiling = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** retry);
  return floorMs + Math.floor(random() * ceiling);
}

/**
 * `Retry-After` in milliseconds: delta-seconds or an HTTP date (RFC 9110 section 10.2.3);
 * undefined when absent or unreadable.
 */
export function parseRetryAfterMs(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
