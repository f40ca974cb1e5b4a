import { expect } from 'chai';
import { type FallbackEvent, FallbackRateLimiter, type SharedRateLimiter } from '../../../src/rate-limit/fallback-rate-limiter';
import { MemoryRateLimiter } from '../../../src/rate-limit/memory-rate-limiter';
import { rateLimitHeaders } from '../../../src/rate-limit/rate-limit-headers';
import { keyPolicy, unauthenticatedPolicy } from '../../../src/rate-limit/rate-limit-policy';
import { type RateLimitDecision, type RateLimitPolicy, type RateLimitUsage, usageOf } from '../../../src/rate-limit/rate-limiter';

const POLICY: RateLimitPolicy = { windows: [{ name: 'minute', limit: 2, seconds: 60 }] };
const NOW = Date.UTC(2030, 0, 1);

/** A shared store whose connection and failures the test switches. */
class FakeShared implements SharedRateLimiter {
  available = true;
  failure: Error | undefined;
  calls = 0;
  unbans: string[] = [];
  private readonly inner = new MemoryRateLimiter({ now: () => NOW });

  async consume(subject: string, policy: RateLimitPolicy): Promise<RateLimitDecision> {
    this.calls += 1;
    if (this.failure !== undefined) throw this.failure;
    return this.inner.consume(subject, policy);
  }

  /** Reports one request used in every window, as a shared store. */
  async usage(_subject: string, policy: RateLimitPolicy): Promise<RateLimitUsage> {
    if (this.failure !== undefined) throw this.failure;
    return usageOf('shared', policy, NOW, policy.windows.map(() => 1), undefined);
  }

  async unban(subject: string): Promise<boolean> {
    this.unbans.push(subject);
    if (this.failure !== undefined) throw this.failure;
    return false;
  }

  async close(): Promise<void> {}
}

describe('FallbackRateLimiter', () => {
  let primary: FakeShared;
  let fallback: MemoryRateLimiter;
  let events: FallbackEvent[];
  let clock: number;
  let limiter: FallbackRateLimiter;

  beforeEach(() => {
    primary = new FakeShared();
    fallback = new MemoryRateLimiter({ now: () => NOW });
    events = [];
    clock = 0;
    limiter = new FallbackRateLimiter({ primary, fallback, log: (event) => events.push(event), monotonicNow: () => clock });
  });

  it('uses the shared store while it works', async () => {
    await limiter.consume('key:a', POLICY);
    expect(primary.calls).to.equal(1);
    expect(limiter.usingFallback).to.equal(false);
    expect(events).to.deep.equal([]);
  });

  it('answers from memory, without calling Redis, while the connection is down', async () => {
    primary.available = false;
    const decisions = [];
    for (let i = 0; i < 3; i += 1) decisions.push(await limiter.consume('key:a', POLICY));
    expect(primary.calls).to.equal(0);
    expect(decisions.map((d) => d.outcome)).to.deep.equal(['allowed', 'allowed', 'limited']);
    expect(events, 'the fallback is logged once').to.have.length(1);
    expect(events[0]!.msg).to.match(/in memory/);
  });

  it('falls back once the deadline has passed without an answer, whatever the store does later, and answers usage the same way', async () => {
    let answer: (decision: RateLimitDecision) => void = () => undefined;
    const hanging: SharedRateLimiter = {
      available: true,
      consume: () => new Promise((resolve) => (answer = resolve)),
      usage: () => new Promise(() => undefined),
      unban: async () => false,
      close: async () => undefined,
    };
    const bounded = new FallbackRateLimiter({ primary: hanging, fallback, log: (event) => events.push(event), monotonicNow: () => clock, deadlineMs: 20 });
    const decision = await bounded.consume('key:a', POLICY);
    expect(decision.outcome).to.equal('allowed');
    expect(bounded.usingFallback).to.equal(true);
    expect(events.map((event) => event.error)).to.deep.equal(['Redis did not answer within 20 ms']);
    // The late answer changes nothing (and throws nowhere).
    answer(await fallback.consume('key:other', POLICY));
    await new Promise((resolve) => setImmediate(resolve));
    expect(bounded.usingFallback).to.equal(true);
    clock += 1000;
    expect((await bounded.usage('key:a', POLICY)).scope, 'usage read from memory after the deadline').to.equal('replica');
  });

  it('falls back when a call fails, then skips the store for a pause so a hung Redis costs one timeout', async () => {
    primary.failure = new Error('Command timed out');
    const first = await limiter.consume('key:a', POLICY);
    expect(first.outcome).to.equal('allowed');
    expect(events.map((e) => e.error)).to.deep.equal(['Command timed out']);
    await limiter.consume('key:a', POLICY);
    expect(primary.calls, 'paused after the failure').to.equal(1);
    clock += 1000;
    await limiter.consume('key:a', POLICY);
    expect(primary.calls, 'tried again after the pause').to.equal(2);
    expect(events, 'still one log line').to.have.length(1);
  });

  it('tells every failure of the store, not only the first that is logged', async () => {
    const told: string[] = [];
    limiter = new FallbackRateLimiter({ primary, fallback, log: (event) => events.push(event), onError: (error) => told.push(error.message), monotonicNow: () => clock });
    primary.failure = new Error('READONLY You can\'t write against a read only replica.');
    await limiter.consume('key:a', POLICY);
    clock += 1000;
    await limiter.consume('key:a', POLICY);
    expect(told).to.have.length(2);
    expect(events, 'logged once').to.have.length(1);
  });

  it('goes back to the store by itself and logs the recovery once', async () => {
    primary.available = false;
    await limiter.consume('key:a', POLICY);
    primary.available = true;
    await limiter.consume('key:a', POLICY);
    await limiter.consume('key:a', POLICY);
    expect(primary.calls).to.equal(2);
    expect(limiter.usingFallback).to.equal(false);
    expect(events).to.have.length(2);
    expect(events[1]!.msg).to.match(/back/);
  });

  it('lifts a ban in both stores', async () => {
    const banning = { windows: POLICY.windows, ban: { threshold: 1, seconds: 60 } };
    primary.available = false;
    for (let i = 0; i < 4; i += 1) await limiter.consume('key:a', banning);
    expect((await fallback.consume('key:a', banning)).outcome).to.equal('banned');
    expect(await limiter.unban('key:a')).to.equal(true);
    expect(primary.unbans).to.deep.equal(['key:a']);
    expect((await fallback.consume('key:a', banning)).outcome).to.equal('limited');
  });

  it('reports an unban that could not reach the shared store', async () => {
    primary.failure = new Error('Connection is closed.');
    let caught: unknown;
    await limiter.unban('key:a').catch((error: unknown) => (caught = error));
    expect((caught as Error).message).to.equal('Connection is closed.');
  });

  it('reads usage from the shared store, else from this replica, without switching or logging', async () => {
    const keyed = { windows: [POLICY.windows[0]!, { name: 'day', limit: 10, seconds: 86_400 }], ban: { threshold: 1, seconds: 60 } };
    expect((await limiter.usage('key:a', keyed)).scope).to.equal('shared');
    await fallback.consume('key:a', keyed);
    primary.available = false;
    const local = await limiter.usage('key:a', keyed);
    expect(local.scope).to.equal('replica');
    expect(local.windows.map((w) => w.used)).to.deep.equal([1, 1]);
    primary.available = true;
    primary.failure = new Error('Command timed out');
    expect((await limiter.usage('key:a', keyed)).scope).to.equal('replica');
    expect(events).to.deep.equal([]);
    expect(limiter.usingFallback).to.equal(false);
  });

  describe('with the limits split over the counting processes', () => {
    const FREE = keyPolicy({ perMinute: 60, perDay: 1000 }, { threshold: 10, seconds: 900 });
    let replicas: number;
    let split: FallbackRateLimiter;

    beforeEach(() => {
      replicas = 3;
      split = new FallbackRateLimiter({ primary, fallback, log: (event) => events.push(event), monotonicNow: () => clock, replicas: () => replicas });
    });

    const admitted = async (subject: string, policy: typeof FREE, count: number): Promise<number> => {
      const decisions = await Promise.all(Array.from({ length: count }, () => split.consume(subject, policy)));
      return decisions.filter((decision) => decision.outcome === 'allowed').length;
    };

    it('counts the whole limit in the shared store, which every process shares', async () => {
      expect(await admitted('key:a', FREE, 90)).to.equal(60);
      expect(primary.calls).to.equal(90);
    });

    it('admits a third of each window on each of three processes while the store is down, and says so in the headers', async () => {
      primary.available = false;
      const headers = rateLimitHeaders(await split.consume('key:a', FREE));
      expect(headers['X-RateLimit-Limit']).to.equal('20');
      expect(headers['X-RateLimit-Remaining']).to.equal('19');
      expect(headers['RateLimit-Policy']).to.equal('"minute";q=20;w=60, "day";q=334;w=86400');
      expect(headers.RateLimit).to.match(/^"minute";r=19;t=\d+, "day";r=333;t=\d+$/);
      expect(await admitted('key:a', FREE, 89)).to.equal(19);
      expect(await admitted('ip:192.0.2.1', unauthenticatedPolicy(60), 30), 'the per-IP bucket too').to.equal(20);
    });

    it('splits when a call times out, as when the connection is down (a slow Redis is an outage too)', async () => {
      primary.failure = new Error('Command timed out');
      let allowed = 0;
      for (let i = 0; i < 30; i += 1) if ((await split.consume('key:a', FREE)).outcome === 'allowed') allowed += 1;
      expect(allowed).to.equal(20);
      expect(primary.calls, 'one call, then the pause').to.equal(1);
    });

    it('follows the count in force, and keeps what was counted when it changes', async () => {
      primary.available = false;
      replicas = 6;
      expect(await admitted('key:a', FREE, 15)).to.equal(10);
      replicas = 2;
      expect(await admitted('key:a', FREE, 30), '30 each now, 10 of them spent').to.equal(20);
      replicas = 1;
      expect(rateLimitHeaders(await split.consume('key:b', FREE))['X-RateLimit-Limit'], 'alone: the whole limit').to.equal('60');
    });

    it('keeps three processes, each counting alone, within the limit plus 2 per window, window after window', async () => {
      let now = Date.UTC(2030, 0, 1, 12, 0, 0);
      const processes = Array.from(
        { length: 3 },
        () => new FallbackRateLimiter({ primary, fallback: new MemoryRateLimiter({ now: () => now }), log: () => undefined, replicas: () => 3 }),
      );
      primary.available = false;
      const policy = keyPolicy({ perMinute: 10, perDay: 25 }, { threshold: 1000, seconds: 900 });
      const minute = async (): Promise<number> => {
        const decisions = await Promise.all(Array.from({ length: 60 }, (_, i) => processes[i % 3]!.consume('key:spread', policy)));
        return decisions.filter((decision) => decision.outcome === 'allowed').length;
      };
      expect(await minute(), 'minute 1: ⌈10 ÷ 3⌉ = 4 on each').to.equal(12);
      now += 60_000;
      expect(await minute(), 'minute 2').to.equal(12);
      now += 60_000;
      expect(await minute(), 'minute 3: the day window, ⌈25 ÷ 3⌉ = 9 on each, has 1 left on each').to.equal(3);
      now += 60_000;
      expect(await minute(), 'the day is spent: 27 = 25 + 2').to.equal(0);
    });

    it('grants at least one request per process to a limit below the number of processes', async () => {
      primary.available = false;
      replicas = 5;
      const tiny = keyPolicy({ perMinute: 2, perDay: 2 }, { threshold: 10, seconds: 900 });
      expect(await admitted('key:tiny', tiny, 4)).to.equal(1);
    });

    it('reports usage against this process\'s share while the store is down', async () => {
      primary.available = false;
      await admitted('key:a', FREE, 5);
      const usage = await split.usage('key:a', FREE);
      expect(usage.scope).to.equal('replica');
      expect(usage.windows.map((window) => [window.window.limit, window.used, window.remaining])).to.deep.equal([
        [20, 5, 15],
        [334, 5, 329],
      ]);
    });
  });
});
