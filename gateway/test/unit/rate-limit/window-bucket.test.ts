import { mock } from 'node:test';
import { expect } from 'chai';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { createWindowBucket, OVERFLOW_SUBJECT, type WindowBucketOptions } from '../../../src/rate-limit/window-bucket';

const PER_IP = { windows: [{ name: 'ip-minute', limit: 5, seconds: 60 }] };
const NOW = Date.UTC(2030, 0, 1, 0, 7, 30);
const MINUTE = Math.floor(NOW / 60_000);

describe('createWindowBucket', () => {
  let memory: RateLimiterMemory[];
  const bucket = (options: Partial<WindowBucketOptions> = {}) =>
    createWindowBucket({
      create: (points, duration) => memory[memory.push(new RateLimiterMemory({ points, duration, keyPrefix: '' })) - 1]!,
      expirySlackSeconds: 0,
      ...options,
    });
  const keys = () => memory[0]!.dump().storage.map((entry) => entry.key);

  beforeEach(() => {
    memory = [];
    // The library's memory store expires counters with setTimeout against Date.now.
    mock.timers.enable({ apis: ['setTimeout', 'Date'], now: NOW });
  });
  afterEach(() => mock.timers.reset());

  it("names each counter after the subject and the window's index since the epoch", async () => {
    await bucket().consume('ip:10.0.0.1', PER_IP, NOW);
    expect(keys()).to.deep.equal([`{rl:ip:10.0.0.1}:ip-minute:${MINUTE}`]);
  });

  it('lets counters expire at the end of their window plus the slack, so client IPs do not pile up', async () => {
    const ips = bucket({ expirySlackSeconds: 60 });
    for (let i = 0; i < 100; i += 1) await ips.consume(`ip:10.0.0.${i}`, PER_IP, NOW);
    mock.timers.tick(89_999);
    expect(memory[0]!.dump().storage).to.have.length(100);
    mock.timers.tick(1);
    expect(memory[0]!.dump().storage).to.have.length(0);
  });

  it('keeps one library limiter per limit', async () => {
    const ips = bucket();
    await ips.consume('ip:a', PER_IP, NOW);
    await ips.consume('ip:b', PER_IP, NOW);
    await ips.consume('ip:a', { windows: [{ name: 'ip-minute', limit: 7, seconds: 60 }] }, NOW);
    expect(memory.map((limiter) => limiter.points)).to.deep.equal([5, 7]);
  });

  it('counts subjects beyond maxSubjects in one shared overflow counter until the window ends', async () => {
    const ips = bucket({ maxSubjects: 3 });
    for (const subject of ['ip:a', 'ip:b', 'ip:c']) await ips.consume(subject, PER_IP, NOW);
    const newcomers = [];
    for (let i = 0; i < 6; i += 1) newcomers.push((await ips.consume(`ip:new-${i}`, PER_IP, NOW)).outcome);
    const known = await ips.consume('ip:a', PER_IP, NOW);
    console.log(`      6 subjects after the cap of 3: ${newcomers.join(', ')}; ${ips.subjects(NOW)} counters for 9 subjects`);
    expect(newcomers).to.deep.equal(['allowed', 'allowed', 'allowed', 'allowed', 'allowed', 'limited']);
    expect(known.outcome).to.equal('allowed');
    expect(known.windows[0]!.remaining).to.equal(3);
    expect(keys()).to.have.length(4).and.include(`{rl:${OVERFLOW_SUBJECT}}:ip-minute:${MINUTE}`);
    expect(ips.subjects(NOW)).to.equal(4);

    const next = NOW + 60_000;
    expect(ips.subjects(next)).to.equal(0);
    for (let i = 0; i < 5; i += 1) await ips.consume('ip:new-5', PER_IP, next);
    expect((await ips.consume('ip:new-6', PER_IP, next)).windows[0]!.remaining).to.equal(4);
    expect(ips.subjects(next)).to.equal(2);
  });
});
