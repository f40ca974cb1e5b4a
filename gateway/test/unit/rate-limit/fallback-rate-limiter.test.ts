import { expect } from 'chai';
import { type FallbackEvent, FallbackRateLimiter, type SharedRateLimiter } from '../../../src/rate-limit/fallback-rate-limiter';
import { MemoryRateLimiter } from '../../../src/rate-limit/memory-rate-limiter';
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
});
