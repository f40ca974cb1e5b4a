import { expect } from 'chai';
import { Redis } from 'ioredis';
import type { RateLimitPolicy } from '../../../src/rate-limit/rate-limiter';
import { checkAtStartup, connectRedis, type RedisConnectionOptions } from '../../../src/rate-limit/redis-connection';
import { RedisRateLimiter } from '../../../src/rate-limit/redis-rate-limiter';
import { rateLimiterContract } from '../../unit/rate-limit/rate-limiter-contract';
import { commandCalls, type RedisServer, startRedisOrSkip, totalCommandCalls } from '../../../../system-test/support/redis-server';
import { clusterTarget, type RedisClusterServers, startRedisClusterOrSkip } from '../../../../system-test/support/redis-topologies';

const FREE: RateLimitPolicy = {
  windows: [
    { name: 'minute', limit: 60, seconds: 60 },
    { name: 'day', limit: 1000, seconds: 86_400 },
  ],
  ban: { threshold: 10, seconds: 900 },
};

const PER_IP: RateLimitPolicy = { windows: [{ name: 'ip-minute', limit: 60, seconds: 60 }] };

/**
 * A limiter on a connection of its own to `target`, as each gateway replica has, once Redis
 * answers; added to `opened`, for the suite to close.
 */
async function openReplica(target: RedisConnectionOptions['target'], commandTimeoutMs: number, now: () => number, opened: RedisRateLimiter[]): Promise<RedisRateLimiter> {
  const redis = connectRedis({ target, commandTimeoutMs });
  expect(await checkAtStartup(redis, target, 5 * commandTimeoutMs)).to.deep.equal({ state: 'ready' });
  const limiter = new RedisRateLimiter({ redis, now });
  opened.push(limiter);
  return limiter;
}

describe('RedisRateLimiter against a real redis-server', function () {
  let server: RedisServer;
  let admin: Redis;
  const opened: RedisRateLimiter[] = [];

  const replica = (now: () => number) => openReplica({ kind: 'standalone', variable: 'REDIS_URL', url: server.url }, 1000, now, opened);

  before(async function () {
    server = await startRedisOrSkip(this);
    admin = new Redis(server.url);
  });
  after(async () => {
    await Promise.all(opened.map((limiter) => limiter.close()));
    admin?.disconnect();
    await server?.stop();
  });

  rateLimiterContract('RedisRateLimiter', async (now) => {
    const limiter = await replica(now);
    return { limiter, close: () => limiter.close() };
  });

  describe('across replicas', () => {
    let now: number;
    let a: RedisRateLimiter;
    let b: RedisRateLimiter;
    const clock = () => now;

    before(async () => {
      a = await replica(clock);
      b = await replica(clock);
    });
    beforeEach(() => {
      now = Date.UTC(2030, 5, 1, 8, 0, 5);
    });

    it('counts 90 concurrent requests from two replicas to exactly 60', async () => {
      const decisions = await Promise.all(
        Array.from({ length: 90 }, (_, i) => (i % 2 === 0 ? a : b).consume('key:replicas', FREE)),
      );
      expect(decisions.filter((d) => d.outcome === 'allowed')).to.have.length(60);
      expect(decisions.filter((d) => d.outcome === 'limited')).to.have.length(10);
      expect(decisions.filter((d) => d.outcome === 'banned')).to.have.length(20);
    });

    it('keeps every key of one subject in one hash slot', async () => {
      for (let i = 0; i < 13; i += 1) await a.consume('key:slots', { ...FREE, windows: [{ ...FREE.windows[0]!, limit: 1 }, FREE.windows[1]!] });
      const keys = await admin.keys('*slots*');
      expect(keys.length).to.be.at.least(3);
      for (const key of keys) expect(key).to.match(/^\{rl:key:slots\}:/);
      expect(keys).to.include('{rl:key:slots}:ban');
      await a.consume('ip:10.9.8.7', PER_IP);
      expect(await admin.keys('*10.9.8.7*')).to.deep.equal([`{rl:ip:10.9.8.7}:ip-minute:${Math.floor(now / 60_000)}`]);
    });

    it('answers a banned key from the replica cache, rechecking Redis at most once a second', async () => {
      const tight: RateLimitPolicy = { ...FREE, windows: [{ name: 'minute', limit: 1, seconds: 60 }], ban: { threshold: 1, seconds: 900 } };
      for (let i = 0; i < 3; i += 1) await a.consume('key:cached', tight);
      const before = await totalCommandCalls(admin);
      for (let i = 0; i < 200; i += 1) expect((await a.consume('key:cached', tight)).outcome).to.equal('banned');
      expect(await totalCommandCalls(admin), 'no command for 200 banned requests').to.equal(before);

      now += 1000;
      const evalsBefore = (await commandCalls(admin)).get('evalsha') ?? 0;
      const rechecks = await Promise.all(Array.from({ length: 50 }, () => a.consume('key:cached', tight)));
      expect(rechecks.every((d) => d.outcome === 'banned')).to.equal(true);
      expect((await commandCalls(admin)).get('evalsha'), 'one recheck for 50 concurrent requests').to.equal(evalsBefore + 1);
    });

    it('makes an unban on one replica reach the others within the recheck interval', async () => {
      const tight: RateLimitPolicy = { ...FREE, windows: [{ name: 'minute', limit: 1, seconds: 60 }], ban: { threshold: 2, seconds: 900 } };
      for (let i = 0; i < 4; i += 1) await a.consume('key:lift', tight);
      expect((await b.consume('key:lift', tight)).outcome).to.equal('banned');
      expect((await a.consume('key:lift', tight)).outcome).to.equal('banned');

      expect(await a.unban('key:lift')).to.equal(true);
      expect((await a.consume('key:lift', tight)).outcome, 'lifted at once where it was lifted').to.equal('limited');
      expect((await b.consume('key:lift', tight)).outcome, 'the other replica still trusts its cache').to.equal('banned');
      now += 1000;
      expect((await b.consume('key:lift', tight)).outcome, 'and learns of the unban on its recheck').to.equal('limited');
    });

    it('reloads its scripts after Redis forgets them', async () => {
      await admin.script('FLUSH');
      expect((await a.consume('key:noscript', FREE)).outcome).to.equal('allowed');
      await admin.script('FLUSH');
      expect((await a.consume('ip:noscript', PER_IP)).outcome, "and so does the library's").to.equal('allowed');
    });
  });
});

describe('RedisRateLimiter against a real three-master Redis Cluster', function () {
  this.timeout(60_000);
  let cluster: RedisClusterServers;
  const opened: RedisRateLimiter[] = [];

  const replica = (now: () => number) => openReplica(clusterTarget(cluster), 2000, now, opened);

  before(async function () {
    cluster = await startRedisClusterOrSkip(this, 3);
  });
  after(async () => {
    await Promise.all(opened.map((limiter) => limiter.close()));
    await cluster?.stop();
  });

  rateLimiterContract('RedisRateLimiter on a Cluster', async (now) => {
    const limiter = await replica(now);
    return { limiter, close: () => limiter.close() };
  });

  it('counts concurrent requests of subjects on every master in one auto-pipelined burst, exactly', async () => {
    const now = Date.UTC(2030, 5, 1, 8, 0, 5);
    const [a, b] = [await replica(() => now), await replica(() => now)];
    // Subjects whose slots lie on different masters: a pipeline mixing them would be refused.
    const subjects = Array.from({ length: 12 }, (_, i) => `key:spread-${i}`);
    const decisions = await Promise.all(
      subjects.flatMap((subject) => Array.from({ length: 15 }, (_, i) => (i % 2 === 0 ? a : b).consume(subject, FREE))),
    );
    expect(decisions.filter((d) => d.outcome === 'allowed')).to.have.length(12 * 15);
    const perIp = await Promise.all(Array.from({ length: 90 }, (_, i) => (i % 2 === 0 ? a : b).consume(`ip:10.0.0.${i % 3}`, PER_IP)));
    expect(perIp.filter((d) => d.outcome === 'allowed'), '30 per address, all within the limit of 60').to.have.length(90);
    const limited = await Promise.all(Array.from({ length: 90 }, (_, i) => (i % 2 === 0 ? a : b).consume('key:cluster-burst', FREE)));
    expect(limited.filter((d) => d.outcome === 'allowed')).to.have.length(60);
    expect(await a.unban('key:cluster-burst')).to.equal(true);
  });
});
