import { mock } from 'node:test';
import { expect } from 'chai';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { createWindowBucket } from '../../../src/rate-limit/window-bucket';

const PER_IP = { windows: [{ name: 'ip-minute', limit: 5, seconds: 60 }] };
const NOW = Date.UTC(2030, 0, 1, 0, 7, 30);

describe('createWindowBucket', () => {
  let memory: RateLimiterMemory[];
  const bucket = () => createWindowBucket((points, duration) => memory[memory.push(new RateLimiterMemory({ points, duration, keyPrefix: '' })) - 1]!);

  beforeEach(() => {
    memory = [];
    // The library's memory store expires counters with setTimeout against Date.now.
    mock.timers.enable({ apis: ['setTimeout', 'Date'] });
  });
  afterEach(() => mock.timers.reset());

  it("names each counter after the subject and the window's index since the epoch", async () => {
    await bucket().consume('ip:10.0.0.1', PER_IP, NOW);
    expect(memory[0]!.dump().storage.map((entry) => entry.key)).to.deep.equal([`{rl:ip:10.0.0.1}:ip-minute:${Math.floor(NOW / 60_000)}`]);
  });

  it('lets counters expire a minute after their window could have ended, so client IPs do not pile up', async () => {
    const ips = bucket();
    for (let i = 0; i < 100; i += 1) await ips.consume(`ip:10.0.0.${i}`, PER_IP, NOW);
    mock.timers.tick(119_999);
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
});
