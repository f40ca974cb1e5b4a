import { RateLimiterMemory } from 'rate-limiter-flexible';
import {
  banned,
  blockingWindow,
  decide,
  type RateLimitDecision,
  type RateLimiter,
  type RateLimitPolicy,
  type RateLimitUsage,
  usageOf,
  windowIndex,
} from './rate-limiter';
import { createWindowBucket, isSingleWindow, type WindowBucket } from './window-bucket';

/** Default of {@link MemoryRateLimiterOptions.maxAddresses}; what it costs in heap is in the README's settings. */
export const DEFAULT_MAX_ADDRESSES = 50_000;

export interface MemoryRateLimiterOptions {
  /** Milliseconds since the epoch. */
  readonly now: () => number;
  /**
   * Most client addresses (per-IP buckets) counted apart in one window; addresses first seen after
   * that share one overflow bucket until the window ends. Default {@link DEFAULT_MAX_ADDRESSES}.
   */
  readonly maxAddresses?: number;
}

interface Counter {
  index: number;
  count: number;
}

interface Subject {
  /** By window name. */
  readonly counters: Map<string, Counter>;
  /** Rejections within one blocked window, named `<window>:<index>`. */
  strikesIn: string;
  strikes: number;
  bannedUntil: number;
}

/**
 * Counters in this process only: the default for a single replica, and the fallback while Redis
 * is unreachable. Same semantics as the Redis store (the shared contract tests hold both to it).
 *
 * The per-IP bucket is rate-limiter-flexible's RateLimiterMemory, whose counters expire by
 * themselves at the end of their window; how many it holds at once is bounded by
 * {@link MemoryRateLimiterOptions.maxAddresses}, so made-up client addresses cannot exhaust the
 * heap. The key policy (two windows spent together, strikes,
 * bans) is counted here, per API key (a set the keys file bounds, so nothing needs sweeping): it must
 * keep the promises of the Redis script, which the library cannot (see rate-limit-script.ts), and
 * decide on the injected clock, while the library's memory store reads `Date.now` itself.
 */
export class MemoryRateLimiter implements RateLimiter {
  private readonly subjects = new Map<string, Subject>();
  private readonly bucket: WindowBucket;

  constructor(private readonly options: MemoryRateLimiterOptions) {
    this.bucket = createWindowBucket({
      create: (points, duration) => new RateLimiterMemory({ points, duration, keyPrefix: '' }),
      expirySlackSeconds: 0,
      maxSubjects: options.maxAddresses ?? DEFAULT_MAX_ADDRESSES,
    });
  }

  /** Per-IP buckets counted in the current window, the overflow bucket included (a metric). */
  get addressBuckets(): number {
    return this.bucket.subjects(this.options.now());
  }

  consume(subject: string, policy: RateLimitPolicy): Promise<RateLimitDecision> {
    const now = this.options.now();
    if (isSingleWindow(policy)) return this.bucket.consume(subject, policy, now);
    return Promise.resolve(this.consumeKey(subject, policy, now));
  }

  private consumeKey(name: string, policy: RateLimitPolicy, now: number): RateLimitDecision {
    let subject = this.subjects.get(name);
    if (subject === undefined) {
      subject = { counters: new Map(), strikesIn: '', strikes: 0, bannedUntil: 0 };
      this.subjects.set(name, subject);
    }
    if (subject.bannedUntil > now) return banned(policy, now, subject.bannedUntil);

    const counters = policy.windows.map((window) => {
      const index = windowIndex(window, now);
      let counter = subject.counters.get(window.name);
      if (counter === undefined) {
        counter = { index, count: 0 };
        subject.counters.set(window.name, counter);
      } else if (counter.index !== index) {
        counter.index = index;
        counter.count = 0;
      }
      return counter;
    });
    const counts = counters.map((counter) => counter.count);
    const blocking = blockingWindow(policy, counts);
    if (blocking === undefined) {
      for (const counter of counters) counter.count += 1;
      return decide(
        policy,
        now,
        counters.map((counter) => counter.count),
        undefined,
      );
    }

    if (policy.ban !== undefined) {
      const strikesIn = `${policy.windows[blocking]!.name}:${counters[blocking]!.index}`;
      subject.strikes = subject.strikesIn === strikesIn ? subject.strikes + 1 : 1;
      subject.strikesIn = strikesIn;
      if (subject.strikes > policy.ban.threshold) {
        subject.bannedUntil = now + policy.ban.seconds * 1000;
        subject.strikes = 0;
        subject.strikesIn = '';
        return banned(policy, now, subject.bannedUntil);
      }
    }
    return decide(policy, now, counts, blocking);
  }

  /** This process's counts only: another replica's, or Redis's, are not seen here. */
  usage(name: string, policy: RateLimitPolicy): Promise<RateLimitUsage> {
    const now = this.options.now();
    const subject = this.subjects.get(name);
    const counts = policy.windows.map((window) => {
      const counter = subject?.counters.get(window.name);
      return counter !== undefined && counter.index === windowIndex(window, now) ? counter.count : 0;
    });
    return Promise.resolve(usageOf('replica', policy, now, counts, subject?.bannedUntil));
  }

  unban(name: string): Promise<boolean> {
    const subject = this.subjects.get(name);
    const wasBanned = subject !== undefined && subject.bannedUntil > this.options.now();
    if (subject !== undefined) subject.bannedUntil = 0;
    return Promise.resolve(wasBanned);
  }

  close(): Promise<void> {
    this.subjects.clear();
    return Promise.resolve();
  }
}
