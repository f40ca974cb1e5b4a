import { expect } from 'chai';
import { MemoryRateLimiter } from '../../../src/rate-limit/memory-rate-limiter';
import { rateLimiterContract } from './rate-limiter-contract';

rateLimiterContract('MemoryRateLimiter', async (now) => {
  const limiter = new MemoryRateLimiter({ now });
  return { limiter, close: () => limiter.close() };
});

describe('MemoryRateLimiter', () => {
  it('forgets subjects whose windows have ended, so client IPs do not pile up', async () => {
    let now = Date.UTC(2030, 0, 1);
    const limiter = new MemoryRateLimiter({ now: () => now });
    const perMinute = { windows: [{ name: 'ip-minute', limit: 5, seconds: 60 }] };
    for (let i = 0; i < 100; i += 1) await limiter.consume(`ip:10.0.0.${i}`, perMinute);
    expect(limiter.size).to.equal(100);
    now += 60_000;
    await limiter.consume('ip:10.0.1.1', perMinute);
    expect(limiter.size).to.equal(1);
  });

  it('keeps a banned subject until its ban ends', async () => {
    let now = Date.UTC(2030, 0, 1);
    const limiter = new MemoryRateLimiter({ now: () => now });
    const banning = { windows: [{ name: 'minute', limit: 1, seconds: 60 }], ban: { threshold: 1, seconds: 600 } };
    for (let i = 0; i < 3; i += 1) await limiter.consume('key:a', banning);
    now += 120_000;
    await limiter.consume('key:b', banning);
    expect(limiter.size).to.equal(2);
    expect((await limiter.consume('key:a', banning)).outcome).to.equal('banned');
  });
});
