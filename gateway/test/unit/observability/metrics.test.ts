import { expect } from 'chai';
import { countKeyDecisions, createMetrics } from '../../../src/observability/metrics';
import { MemoryRateLimiter } from '../../../src/rate-limit/memory-rate-limiter';
import { keyPolicy, keySubject } from '../../../src/rate-limit/rate-limit-policy';

describe('gateway metrics', () => {
  describe('pet_service_serving', () => {
    const scraped = async (metrics: ReturnType<typeof createMetrics>): Promise<string | undefined> =>
      /^pet_service_serving (\S+)$/m.exec(await metrics.registry.metrics())?.[1];

    it('asks the check at every scrape: 1 while it passes, 0 when it fails, 0 before one is named', async () => {
      const metrics = createMetrics();
      expect(await scraped(metrics)).to.equal('0');
      let serving = true;
      let asked = 0;
      metrics.checkPetServiceWith(async () => {
        asked += 1;
        if (!serving) throw new Error('pet service is NOT_SERVING');
      });
      expect(await scraped(metrics)).to.equal('1');
      serving = false;
      expect(await scraped(metrics)).to.equal('0');
      serving = true;
      expect(await scraped(metrics)).to.equal('1');
      expect(asked).to.equal(3);
    });
  });

  describe('grpc_client_connections', () => {
    it('reads the pet service client’s connections by state at every scrape, every state named; nothing before a client is named', async () => {
      const metrics = createMetrics();
      const scrape = async () => [...(await metrics.registry.metrics()).matchAll(/^grpc_client_connections\{state="(\w+)"\} (\d+)$/gm)].map(([, state, value]) => `${state}=${value}`);
      expect(await scrape()).to.deep.equal([]);
      let counts = { idle: 0, connecting: 1, ready: 2, transient_failure: 0, draining: 0 };
      metrics.countConnectionsWith(() => counts);
      expect(await scrape()).to.deep.equal(['idle=0', 'connecting=1', 'ready=2', 'transient_failure=0', 'draining=0']);
      counts = { idle: 0, connecting: 0, ready: 2, transient_failure: 1, draining: 1 };
      expect(await scrape()).to.deep.equal(['idle=0', 'connecting=0', 'ready=2', 'transient_failure=1', 'draining=1']);
    });
  });

  describe('countKeyDecisions', () => {
    const policy = keyPolicy({ perMinute: 1, perDay: 100 }, { threshold: 1, seconds: 900 });

    it('counts decisions by key id for the listed keys only, each starting at 0 per outcome', async () => {
      const metrics = createMetrics();
      const limiter = countKeyDecisions(new MemoryRateLimiter({ now: () => 0 }), metrics, ['watched', 'quiet']);
      for (let i = 0; i < 4; i += 1) await limiter.consume(keySubject('watched'), policy);
      for (let i = 0; i < 2; i += 1) await limiter.consume(keySubject('other'), policy);
      await limiter.consume('ip:192.0.2.1', { windows: [{ name: 'ip-minute', limit: 5, seconds: 60 }] });
      const values = (await metrics.rateLimitKeyDecisions.get()).values.map(({ labels, value }) => [labels.key_id, labels.outcome, value]);
      expect(values).to.have.deep.members([
        ['watched', 'allowed', 1],
        ['watched', 'limited', 1],
        ['watched', 'banned', 2],
        ['quiet', 'allowed', 0],
        ['quiet', 'limited', 0],
        ['quiet', 'banned', 0],
      ]);
      expect((await limiter.usage(keySubject('watched'), policy)).bannedUntil, 'usage passes through').to.equal(900_000);
    });

    it('returns the limiter itself when no key is listed', () => {
      const memory = new MemoryRateLimiter({ now: () => 0 });
      expect(countKeyDecisions(memory, createMetrics(), [])).to.equal(memory);
    });
  });
});
