import { expect } from 'chai';
import type { Context } from 'mocha';
import type { RedisTarget } from '../../../src/config';
import { FallbackRateLimiter } from '../../../src/rate-limit/fallback-rate-limiter';
import { MemoryRateLimiter } from '../../../src/rate-limit/memory-rate-limiter';
import { rateLimitHeaders } from '../../../src/rate-limit/rate-limit-headers';
import { keyPolicy } from '../../../src/rate-limit/rate-limit-policy';
import { checkAtStartup, connectRedis } from '../../../src/rate-limit/redis-connection';
import { RedisRateLimiter } from '../../../src/rate-limit/redis-rate-limiter';
import { REPLICAS_KEY, REPLICAS_SINCE_KEY, ReplicaHeartbeat } from '../../../src/rate-limit/replica-heartbeat';
import { type RedisServer, startRedisOrSkip } from '../../../../system-test/support/redis-server';
import { clusterTarget, sentinelTarget, startRedisClusterOrSkip, startRedisSentinelOrSkip, withClient } from '../../../../system-test/support/redis-topologies';
import { waitFor } from '../../../../system-test/support/wait-for';

const TTL_MS = 15_000;
const FREE = keyPolicy({ perMinute: 60, perDay: 1000 }, { threshold: 10, seconds: 900 });

interface Topology {
  readonly target: RedisTarget;
  /** The registry's keys wherever they are, with the node that holds them. */
  registryKeys(): Promise<Array<{ port: number; keys: string[] }>>;
  stop(): Promise<void>;
}

/** One counting process: a limiter on its own connection and its heartbeat, on a clock the test moves. */
interface Process {
  readonly limiter: RedisRateLimiter;
  readonly heartbeat: ReplicaHeartbeat;
}

async function openProcess(target: RedisTarget, id: string, now: () => number, commandTimeoutMs: number): Promise<Process> {
  const redis = connectRedis({ target, commandTimeoutMs });
  expect(await checkAtStartup(redis, target, 10_000)).to.deep.equal({ state: 'ready' });
  const limiter = new RedisRateLimiter({ redis, now });
  return { limiter, heartbeat: new ReplicaHeartbeat({ registry: limiter, now, initial: 1, ttlMs: TTL_MS, id }) };
}

/** The registry of counting processes on one topology: counted, expired, left; one hash slot. */
function registrySuite(name: string, start: (context: Context) => Promise<Topology>): void {
  describe(`the heartbeat's registry of counting processes (${name})`, function () {
    this.timeout(60_000);
    let topology: Topology;
    let now: number;
    const processes: Process[] = [];

    before(async function () {
      topology = await start(this);
      now = Date.UTC(2030, 5, 1, 8, 0, 5);
      for (const id of ['a', 'b', 'c']) processes.push(await openProcess(topology.target, id, () => now, 2000));
    });
    after(async () => {
      await Promise.all(processes.map((process) => process.limiter.close()));
      await topology?.stop();
    });

    it('counts every process that beats, forgets one that stopped after the time to live, and one that left at once', async () => {
      const [a, b, c] = processes as [Process, Process, Process];
      for (const process of processes) await process.heartbeat.beat();
      expect(processes.map((process) => process.heartbeat.replicas)).to.deep.equal([1, 2, 3]);
      for (const process of processes) await process.heartbeat.beat();
      expect(processes.map((process) => process.heartbeat.replicas)).to.deep.equal([3, 3, 3]);

      const holders = (await topology.registryKeys()).filter((node) => node.keys.length > 0);
      expect(holders, 'one node holds the registry').to.have.length(1);
      expect(holders[0]!.keys.sort()).to.deep.equal([REPLICAS_KEY, REPLICAS_SINCE_KEY]);

      now += 10_000;
      await a.heartbeat.beat();
      await b.heartbeat.beat();
      expect([a.heartbeat.replicas, b.heartbeat.replicas], 'c beat 10 s ago').to.deep.equal([3, 3]);
      now += 6_000;
      await a.heartbeat.beat();
      await b.heartbeat.beat();
      expect([a.heartbeat.replicas, b.heartbeat.replicas], 'c missed its beats for longer than the time to live').to.deep.equal([2, 2]);
      expect(c.heartbeat.replicas, 'and still counts the last value it had').to.equal(3);

      await b.heartbeat.stop();
      await a.heartbeat.beat();
      expect(a.heartbeat.replicas, 'b left').to.equal(1);
    });
  });
}

registrySuite('one Redis', async (context) => {
  const server = await startRedisOrSkip(context);
  return {
    target: { kind: 'standalone', variable: 'REDIS_URL', url: server.url },
    registryKeys: async () => [{ port: server.port, keys: await withClient(server.port, (client) => client.keys('{rl:replicas}*')) }],
    stop: () => server.stop(),
  };
});

registrySuite('a three-master Cluster', async (context) => {
  const cluster = await startRedisClusterOrSkip(context, 3);
  return {
    target: clusterTarget(cluster),
    registryKeys: () =>
      Promise.all(cluster.nodes.map(async (node) => ({ port: node.port, keys: await withClient(node.port, (client) => client.keys('{rl:replicas}*')) }))),
    stop: () => cluster.stop(),
  };
});

registrySuite('Sentinel', async (context) => {
  const passwords = { dataPassword: 'data-pass-2', sentinelPassword: 'sentinel-pass-2' };
  const sentinel = await startRedisSentinelOrSkip(context, { downAfterMs: 5000, ...passwords });
  return {
    target: sentinelTarget(sentinel, passwords),
    registryKeys: async () => {
      const port = await sentinel.masterPort();
      return [{ port, keys: await withClient(port, (client) => client.keys('{rl:replicas}*'), 'data-pass-2') }];
    },
    stop: () => sentinel.stop(),
  };
});

describe('three processes splitting the limits while one Redis is out', function () {
  this.timeout(60_000);
  let server: RedisServer;
  const now = Date.UTC(2030, 5, 1, 8, 0, 5);
  const processes: Array<Process & { readonly fallback: FallbackRateLimiter }> = [];

  before(async function () {
    server = await startRedisOrSkip(this);
    const target: RedisTarget = { kind: 'standalone', variable: 'REDIS_URL', url: server.url };
    for (const id of ['a', 'b', 'c']) {
      // Long enough that a loaded machine does not fall back by itself in the exact bursts.
      const process = await openProcess(target, id, () => now, 1000);
      const fallback = new FallbackRateLimiter({
        primary: process.limiter,
        fallback: new MemoryRateLimiter({ now: () => now }),
        log: () => undefined,
        replicas: () => process.heartbeat.replicas,
      });
      processes.push({ ...process, fallback });
    }
    for (let round = 0; round < 2; round += 1) for (const process of processes) await process.heartbeat.beat();
  });
  after(async () => {
    await Promise.all(processes.map((process) => process.fallback.close()));
    await server?.stop();
  });

  const burst = async (subject: string, count: number) => {
    const decisions = await Promise.all(Array.from({ length: count }, (_, i) => processes[i % 3]!.fallback.consume(subject, FREE)));
    return { decisions, allowed: decisions.filter((decision) => decision.outcome === 'allowed').length };
  };

  it('admits a third of the limit on each while Redis hangs past the command timeout, and keeps the count its beats cannot renew', async () => {
    expect(processes.map((process) => process.heartbeat.replicas)).to.deep.equal([3, 3, 3]);
    globalThis.process.kill(server.pid, 'SIGSTOP');
    try {
      const { decisions, allowed } = await burst('key:hung', 90);
      expect(processes.every((process) => process.fallback.usingFallback), 'every process timed out and fell back').to.equal(true);
      expect(allowed, '60 ÷ 3 = 20 on each of three').to.equal(60);
      const limits = new Set(decisions.filter((d) => d.outcome === 'allowed').map((d) => rateLimitHeaders(d)['X-RateLimit-Limit']));
      expect([...limits], 'the headers show the share in force').to.deep.equal(['20']);
      await Promise.all(processes.map((process) => process.heartbeat.beat()));
      expect(processes.map((process) => process.heartbeat.replicas), 'a beat that timed out changes nothing').to.deep.equal([3, 3, 3]);
    } finally {
      globalThis.process.kill(server.pid, 'SIGCONT');
    }
  });

  it('counts in Redis again once it answers, and beats again', async () => {
    await waitFor(async () => {
      await burst('key:back', 3);
      return processes.every((process) => !process.fallback.usingFallback);
    }, 10_000);
    const { allowed } = await burst('key:back-exact', 90);
    expect(allowed, 'the whole limit, shared').to.equal(60);
    await Promise.all(processes.map((process) => process.heartbeat.beat()));
    expect(processes.map((process) => process.heartbeat.replicas)).to.deep.equal([3, 3, 3]);
  });

  it('keeps the count when Redis restarts and forgets the registry: a new registry cannot lower it', async () => {
    await server.restart();
    await waitFor(() => processes.every((process) => process.limiter.available), 10_000);
    const a = processes[0]!;
    await a.heartbeat.beat();
    expect(a.heartbeat.replicas, 'alone in a new registry, which may lack the others').to.equal(3);
    expect(await withClient(server.port, (client) => client.zcard(REPLICAS_KEY)), 'the registry is new').to.equal(1);
    for (const process of processes) await process.heartbeat.beat();
    expect(processes.map((process) => process.heartbeat.replicas)).to.deep.equal([3, 3, 3]);
  });
});
