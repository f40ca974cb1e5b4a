import { Agent, request } from 'node:http';
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { type RedisServer, startRedisOrSkip } from './support/redis-server';
import { type ServiceProcess, startService } from './support/service-process';
import { REPLICAS_KEY, REPLICAS_SINCE_KEY } from '../gateway/src/rate-limit/replica-heartbeat';

// Issue 13: with TRUST_PROXY=true every X-Forwarded-For value became a bucket of its own.
const TRUSTING = { TRUST_PROXY: 'true', PET_SERVICE_ADDR: '127.0.0.1:1', LOG_LEVEL: 'info' };
/** Under Node's 16 KB header limit, so each of these is a valid request. */
const OVERSIZED = 15_000;
const PER_MINUTE = 60;

/**
 * `count` unauthenticated GETs of /v1/pets, `forwardedFor(i)` as X-Forwarded-For, 16 at a time;
 * statuses counted, and the UTC minutes the flood spanned: the per-address limit is per minute, and
 * a flood lasts as long as the machine makes it (20,000 requests can outlast a minute).
 */
async function flood(port: number, count: number, forwardedFor: (i: number) => string): Promise<{ statuses: Map<number, number>; minutes: number }> {
  const firstMinute = Math.floor(Date.now() / 60_000);
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  const statuses = new Map<number, number>();
  let next = 0;
  const one = (i: number): Promise<number> =>
    new Promise((resolve, reject) => {
      const sent = request({ agent, port, host: '127.0.0.1', path: '/v1/pets', headers: { 'X-Forwarded-For': forwardedFor(i) } }, (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode!));
      });
      sent.setTimeout(10_000, () => sent.destroy(new Error('no response in 10 s')));
      sent.on('error', reject);
      sent.end();
    });
  const loop = async (): Promise<void> => {
    while (next < count) {
      const status = await one(next++);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  };
  try {
    await Promise.all(Array.from({ length: 16 }, loop));
  } finally {
    agent.destroy();
  }
  return { statuses, minutes: Math.floor(Date.now() / 60_000) - firstMinute + 1 };
}

async function metric(gateway: ServiceProcess, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${gateway.adminPort}/metrics`)).text();
  const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  if (match === null) throw new Error(`${name} not in /metrics`);
  return Number(match[1]);
}

/** Not numbered: no two made-up values are alike, and none is an address. */
const madeUp = (i: number): string => `client-${i}-`.padEnd(OVERSIZED, 'x');
const mb = (bytes: number): string => (bytes / 2 ** 20).toFixed(1);

describe('spoofed X-Forwarded-For addresses (TRUST_PROXY=true)', function () {
  this.timeout(180_000);

  describe('in memory', () => {
    let gateway: ServiceProcess;
    afterEach(() => gateway?.stop());

    it('keeps RSS flat under 20,000 distinct 15 KB made-up addresses, all charged to the socket address', async () => {
      gateway = await startService('gateway', TRUSTING);
      // Warm-up: the same requests, so code, buffers and heap are at their working size.
      await flood(gateway.port, 2_000, (i) => madeUp(-i - 1));
      const before = await metric(gateway, 'process_resident_memory_bytes');
      const { statuses, minutes } = await flood(gateway.port, 20_000, madeUp);
      const after = await metric(gateway, 'process_resident_memory_bytes');
      const buckets = await metric(gateway, 'rate_limiter_memory_address_buckets');
      console.log(
        `      RSS ${mb(before)} -> ${mb(after)} MB (+${mb(after - before)}); statuses ${JSON.stringify([...statuses])} in ${minutes} minute(s); ${buckets} per-IP buckets`,
      );
      // Without the check each value was a bucket: 20,000 x 2 copies x 15 KB, some 600 MB.
      expect(after - before, 'RSS growth').to.be.below(100 * 2 ** 20);
      // One bucket for all: at most the limit in each minute the flood touched.
      expect(20_000 - (statuses.get(429) ?? 0), `admitted in ${minutes} minute(s)`).to.be.at.most(PER_MINUTE * minutes);
      expect(buckets).to.be.at.most(2);
    });

    it('charges every address of one IPv6 /64 to one bucket', async () => {
      gateway = await startService('gateway', TRUSTING);
      const { statuses, minutes } = await flood(gateway.port, 1_000, (i) => `2001:db8:77:1:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::1`);
      console.log(`      1,000 addresses in one /64: statuses ${JSON.stringify([...statuses])} in ${minutes} minute(s)`);
      expect(1_000 - (statuses.get(429) ?? 0), `admitted in ${minutes} minute(s)`).to.be.at.most(PER_MINUTE * minutes);
    });

    it('counts addresses beyond UNAUTHENTICATED_MAX_ADDRESSES in one overflow bucket, and reports the count', async () => {
      const max = 1_000;
      gateway = await startService('gateway', { ...TRUSTING, UNAUTHENTICATED_MAX_ADDRESSES: String(max) });
      const distinct = 5_000;
      const { statuses, minutes } = await flood(gateway.port, distinct, (i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
      const buckets = await metric(gateway, 'rate_limiter_memory_address_buckets');
      const allowed = distinct - (statuses.get(429) ?? 0);
      console.log(`      ${distinct} distinct IPv4 addresses, cap ${max}: ${allowed} allowed in ${minutes} minute(s), ${buckets} per-IP buckets`);
      // Each address once: in each minute the flood touched, the cap's worth on their own and the overflow's 60.
      expect(allowed).to.be.at.most(minutes * (max + PER_MINUTE));
      expect(buckets).to.be.within(1, max + 1);
    });
  });

  describe('with Redis', () => {
    let redis: RedisServer;
    let client: Redis;
    let gateway: ServiceProcess;

    before(async function () {
      redis = await startRedisOrSkip(this);
      client = new Redis(redis.url);
    });
    after(async () => {
      await gateway?.stop();
      client?.disconnect();
      await redis?.stop();
    });

    it('keeps every counter key short, whatever the forwarded value', async () => {
      gateway = await startService('gateway', { ...TRUSTING, REDIS_URL: redis.url });
      const values = [madeUp, (i: number) => `fe80::${i.toString(16)}%${'z'.repeat(OVERSIZED)}`, (i: number) => `2001:db8:${i.toString(16)}::1`];
      const { statuses, minutes } = await flood(gateway.port, 3_000, (i) => values[i % 3]!(i));
      let longest = 0;
      let count = 0;
      for await (const keys of client.scanStream({ count: 1000 }) as AsyncIterable<string[]>) {
        // The replicas' heartbeat keeps two keys of its own, whatever the traffic.
        const counters = keys.filter((key) => key !== REPLICAS_KEY && key !== REPLICAS_SINCE_KEY);
        for (const key of counters) longest = Math.max(longest, key.length);
        count += counters.length;
      }
      console.log(`      3,000 requests in ${minutes} minute(s): ${count} keys in Redis, the longest ${longest} characters; statuses ${JSON.stringify([...statuses])}`);
      expect(longest).to.be.at.most(64);
      // A key per 2001:db8 /64 (each asked once), the start-up probe's, and in each minute one for
      // fe80::/64 (the zone dropped) and one for the socket's address (the made-up values).
      expect(count).to.be.at.most(3_000 / 3 + 1 + 2 * minutes);
    });
  });
});
