import {
  banned,
  blockingWindow,
  decide,
  type RateLimitDecision,
  type RateLimiter,
  type RateLimitPolicy,
  windowEnd,
  windowIndex,
} from './rate-limiter';

export interface MemoryRateLimiterOptions {
  /** Milliseconds since the epoch. */
  readonly now: () => number;
}

interface Counter {
  index: number;
  count: number;
  /** End of the counter's window, ms since the epoch. */
  endsAt: number;
}

interface Subject {
  /** By window name. */
  readonly counters: Map<string, Counter>;
  /** Rejections within one blocked window, named `<window>:<index>`. */
  strikesIn: string;
  strikes: number;
  bannedUntil: number;
}

const SWEEP_EVERY_MS = 60_000;

/**
 * Counters in this process only: the default for a single replica, and the fallback while Redis
 * is unreachable. Same semantics as the Redis store (the shared contract tests hold both to it).
 */
export class MemoryRateLimiter implements RateLimiter {
  private readonly subjects = new Map<string, Subject>();
  private nextSweepAt = 0;

  constructor(private readonly options: MemoryRateLimiterOptions) {}

  consume(subject: string, policy: RateLimitPolicy): Promise<RateLimitDecision> {
    return Promise.resolve(this.consumeNow(subject, policy));
  }

  /** Synchronous form of {@link consume}. */
  consumeNow(name: string, policy: RateLimitPolicy): RateLimitDecision {
    const now = this.options.now();
    this.sweep(now);
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
        counter = { index, count: 0, endsAt: windowEnd(window, now) };
        subject.counters.set(window.name, counter);
      } else if (counter.index !== index) {
        counter.index = index;
        counter.count = 0;
        counter.endsAt = windowEnd(window, now);
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

  /** How many subjects are held; the sweep keeps this from growing with every client IP seen. */
  get size(): number {
    return this.subjects.size;
  }

  /** Forgets subjects whose windows have all ended and that are not banned. */
  private sweep(now: number): void {
    if (now < this.nextSweepAt) return;
    this.nextSweepAt = now + SWEEP_EVERY_MS;
    for (const [name, subject] of this.subjects) {
      if (subject.bannedUntil > now) continue;
      let live = false;
      for (const counter of subject.counters.values()) if (counter.endsAt > now) live = true;
      if (!live) this.subjects.delete(name);
    }
  }
}
