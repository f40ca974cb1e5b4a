import type { Sleep } from './sleep';

/** The `X-RateLimit-*` fields of a response: the window closest to exhaustion (docs/rate-limits.md). */
export interface RateLimitSnapshot {
  readonly limit: number;
  readonly remaining: number;
  /** Unix time, in seconds, at which that window (or a ban) ends. */
  readonly reset: number;
}

/** Handed out by {@link RateLimitGate.acquire}, handed back to {@link RateLimitGate.release}. */
export interface Ticket {
  readonly probe: boolean;
}

/** The `X-RateLimit-*` fields of `headers`; undefined unless all three are integers. */
export function readRateLimitHeaders(headers: Headers): RateLimitSnapshot | undefined {
  const [limit, remaining, reset] = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'].map((name) => {
    const value = headers.get(name);
    return value !== null && /^\d+$/.test(value) ? Number(value) : undefined;
  });
  if (limit === undefined || remaining === undefined || reset === undefined) return undefined;
  return { limit, remaining, reset };
}

/**
 * What one client knows of its key's limit, shared by all its calls. Every request passes
 * {@link acquire} before it is sent and {@link release} after.
 *
 * - After a 429 (`blockUntil`), no call sends anything until `Retry-After` has passed, so
 *   concurrent calls do not each collect a refusal: refusals while limited are what bans a key.
 * - With pacing on, it is a token bucket on the last `X-RateLimit-Remaining`, refilled at
 *   `X-RateLimit-Reset`: a request is sent only while the window has a request left, counting the
 *   requests still in flight as spent. While the window is unknown (at the start, or once its
 *   reset has passed) one request goes alone to learn it. The reset is the server's clock, so
 *   pacing assumes the two clocks agree (NTP); a 429 that gets through anyway is retried as usual.
 */
export class RateLimitGate {
  private lastSnapshot: RateLimitSnapshot | undefined;
  private blockedUntil = 0;
  private known = false;
  private probing = false;
  private tokens = 0;
  private windowEndsAt = 0;
  private inFlight = 0;
  private waiters = new Set<() => void>();

  constructor(
    private readonly pace: boolean,
    private readonly now: () => number,
    private readonly sleep: Sleep,
  ) {}

  /** The fields of the last response that carried them. */
  get snapshot(): RateLimitSnapshot | undefined {
    return this.lastSnapshot;
  }

  /** Holds every call back until `until` (ms since the epoch). */
  blockUntil(until: number): void {
    this.blockedUntil = Math.max(this.blockedUntil, until);
  }

  /** Resolves when a request may be sent; rejects with the signal's reason if it aborts first. */
  async acquire(signal: AbortSignal): Promise<Ticket> {
    let probe = false;
    for (;;) {
      signal.throwIfAborted();
      const now = this.now();
      if (now < this.blockedUntil) {
        await this.sleep(this.blockedUntil - now, signal);
        continue;
      }
      if (!this.pace) break;
      if (this.known && now >= this.windowEndsAt) this.known = false;
      if (!this.known) {
        if (!this.probing) {
          this.probing = probe = true;
          break;
        }
        await this.nextRelease(signal);
        continue;
      }
      if (this.tokens > 0) {
        this.tokens -= 1;
        break;
      }
      await this.sleep(this.windowEndsAt - now, signal);
    }
    this.inFlight += 1;
    return { probe };
  }

  /** The request of `ticket` is over; `headers` are its response's, if one came. */
  release(ticket: Ticket, headers: Headers | undefined): void {
    this.inFlight -= 1;
    if (ticket.probe) this.probing = false;
    const snapshot = headers === undefined ? undefined : readRateLimitHeaders(headers);
    if (snapshot !== undefined) this.observe(snapshot);
    for (const wake of this.waiters) wake();
    this.waiters.clear();
  }

  private observe(snapshot: RateLimitSnapshot): void {
    this.lastSnapshot = snapshot;
    const endsAt = snapshot.reset * 1000;
    // Requests still in flight may not be counted in this answer yet: count them as spent.
    const left = Math.max(0, snapshot.remaining - this.inFlight);
    if (!this.known || endsAt > this.windowEndsAt) {
      this.known = true;
      this.windowEndsAt = endsAt;
      this.tokens = left;
    } else if (endsAt === this.windowEndsAt) {
      this.tokens = Math.min(this.tokens, left);
    }
  }

  private nextRelease(signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        this.waiters.delete(wake);
        reject(signal.reason);
      };
      const wake = (): void => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      this.waiters.add(wake);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
