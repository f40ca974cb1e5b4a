import { expect } from 'chai';
import type { Context } from 'mocha';
import type { RedisTarget } from '../../../src/config';
import type { RateLimitPolicy } from '../../../src/rate-limit/rate-limiter';
import { checkAtStartup, connectRedis } from '../../../src/rate-limit/redis-connection';
import { RedisRateLimiter } from '../../../src/rate-limit/redis-rate-limiter';
import { type RedisServer, startRedisOrSkip } from '../../../../system-test/support/redis-server';
import { clusterTarget, sentinelTarget, startRedisClusterOrSkip, startRedisSentinelOrSkip, withClient } from '../../../../system-test/support/redis-topologies';
import { waitFor } from '../../../../system-test/support/wait-for';

const KEY: RateLimitPolicy = {
  windows: [
    { name: 'minute', limit: 60, seconds: 60 },
    { name: 'day', limit: 1000, seconds: 86_400 },
  ],
  ban: { threshold: 10, seconds: 900 },
};
const PER_IP: RateLimitPolicy = { windows: [{ name: 'ip-minute', limit: 60, seconds: 60 }] };
const NOW = Date.UTC(2030, 5, 1, 8, 0, 5);

interface Topology {
  readonly target: RedisTarget;
  /** Counter keys of `subject` on the server(s), read past the limiter. */
  keysOf(subject: string): Promise<string[]>;
  stop(): Promise<void>;
}

/**
 * A fresh limiter's first requests, keyed and keyless in one event-loop turn, as a new gateway
 * meets them when it joins under load. With ioredis's auto-pipelining, a script defined on the
 * client after a pipeline was opened in the same turn is missing from that pipeline; the command
 * throws inside it and the pipeline's replies no longer line up with its callbacks, which then
 * throw outside any promise (https://github.com/redis/ioredis/issues/1931). Every decision
 * here must come from Redis, and the process must live.
 */
function firstBurstSuite(name: string, start: (context: Context) => Promise<Topology>): void {
  describe(`a fresh Redis limiter's first mixed burst (${name})`, function () {
    this.timeout(60_000);
    let topology: Topology;
    const opened: RedisRateLimiter[] = [];

    const fresh = async (): Promise<RedisRateLimiter> => {
      const redis = connectRedis({ target: topology.target, commandTimeoutMs: 2000 });
      expect(await checkAtStartup(redis, topology.target, 10_000)).to.deep.equal({ state: 'ready' });
      const limiter = new RedisRateLimiter({ redis, now: () => NOW });
      opened.push(limiter);
      return limiter;
    };

    before(async function () {
      topology = await start(this);
    });
    after(async () => {
      await Promise.all(opened.map((limiter) => limiter.close()));
      await topology?.stop();
    });

    for (const order of ['keyed first', 'keyless first'] as const) {
      it(`counts every request of the first turn in Redis, ${order}`, async () => {
        const limiter = await fresh();
        const tag = `${name}-${order}`.replace(/\W/g, '-');
        const keyed = Array.from({ length: 4 }, (_, i) => `key:${tag}-${i}`);
        const keyless = Array.from({ length: 4 }, (_, i) => `ip:10.1.${i}.${order === 'keyed first' ? 1 : 2}`);
        const burst = order === 'keyed first' ? [...keyed, ...keyless] : [...keyless, ...keyed];
        // All in one synchronous loop: one turn, so one auto-pipeline per node.
        const decisions = await Promise.allSettled(burst.map((subject) => limiter.consume(subject, subject.startsWith('key:') ? KEY : PER_IP)));
        expect(decisions.map((d) => d.status)).to.deep.equal(burst.map(() => 'fulfilled'));
        for (const subject of burst) expect(await topology.keysOf(subject), subject).to.have.length.greaterThan(0);
      });
    }
  });
}

async function standalone(context: Context): Promise<Topology> {
  const server = await startRedisOrSkip(context);
  return {
    target: { kind: 'standalone', variable: 'REDIS_URL', url: server.url },
    keysOf: (subject) => withClient(server.port, (client) => client.keys(`{rl:${subject}}:*`)),
    stop: () => server.stop(),
  };
}

firstBurstSuite('one Redis', standalone);

firstBurstSuite('a three-master Cluster', async (context) => {
  const cluster = await startRedisClusterOrSkip(context, 3);
  return {
    target: clusterTarget(cluster),
    keysOf: async (subject) => (await Promise.all(cluster.nodes.map((node) => withClient(node.port, (client) => client.keys(`{rl:${subject}}:*`))))).flat(),
    stop: () => cluster.stop(),
  };
});

firstBurstSuite('Sentinel', async (context) => {
  const passwords = { dataPassword: 'data-pass-1', sentinelPassword: 'sentinel-pass-1' };
  const sentinel = await startRedisSentinelOrSkip(context, { downAfterMs: 5000, ...passwords });
  return {
    target: sentinelTarget(sentinel, passwords),
    keysOf: async (subject) => withClient(await sentinel.masterPort(), (client) => client.keys(`{rl:${subject}}:*`), 'data-pass-1'),
    stop: () => sentinel.stop(),
  };
});

describe("a Redis limiter's first mixed burst after Redis restarted and forgot its scripts", function () {
  this.timeout(60_000);
  let server: RedisServer;
  let limiter: RedisRateLimiter;

  before(async function () {
    server = await startRedisOrSkip(this);
    const target: RedisTarget = { kind: 'standalone', variable: 'REDIS_URL', url: server.url };
    const redis = connectRedis({ target, commandTimeoutMs: 2000 });
    expect(await checkAtStartup(redis, target, 10_000)).to.deep.equal({ state: 'ready' });
    limiter = new RedisRateLimiter({ redis, now: () => NOW });
  });
  after(async () => {
    await limiter?.close();
    await server?.stop();
  });

  it('counts the burst after the restart in Redis, keyed and keyless alike', async () => {
    await limiter.consume('key:before-restart', KEY);
    await server.restart();
    await waitFor(() => limiter.available, 10_000);
    const burst = ['key:after-restart', 'ip:10.2.0.1', 'key:after-restart-2', 'ip:10.2.0.2'];
    const decisions = await Promise.allSettled(burst.map((subject) => limiter.consume(subject, subject.startsWith('key:') ? KEY : PER_IP)));
    expect(decisions.map((d) => d.status)).to.deep.equal(burst.map(() => 'fulfilled'));
    for (const subject of burst) {
      expect(await withClient(server.port, (client) => client.keys(`{rl:${subject}}:*`)), subject).to.have.length.greaterThan(0);
    }
  });
});
