import { expect } from 'chai';
import { findRedisServer, type RedisServer, startRedisOrSkip, startRedisServer } from './support/redis-server';
import { expectOneLineRefusals, withClient } from './support/redis-topologies';
import { replicaSecret, type ReplicaSet, startReplicaSet } from './support/replica-set';
import type { ServiceProcess } from './support/service-process';
import { waitFor } from './support/wait-for';

const PASSWORD = 'the-right-password';

describe('a Redis that answers but cannot hold the counters: refused at start-up, reported at run time', function () {
  this.timeout(90_000);
  let redis: RedisServer;
  let other: RedisServer;
  let guarded: RedisServer;
  let replicas: ReplicaSet;
  let gateway: ServiceProcess;

  before(async function () {
    redis = await startRedisOrSkip(this);
    other = await startRedisServer(findRedisServer()!);
    guarded = await startRedisServer(findRedisServer()!, undefined, { args: ['--requirepass', PASSWORD] });
    replicas = await startReplicaSet(1, [{ id: 'steady', plan: 'enterprise', limits: { perMinute: 1_000_000, perDay: 100_000_000 } }], {
      REDIS_URL: redis.url,
      REDIS_COMMAND_TIMEOUT_MS: '2000',
    });
    gateway = replicas.gateways[0]!;
  });
  after(async () => {
    await replicas?.stop();
    await Promise.all([redis, other, guarded].map((server) => server?.stop()));
  });

  it('refuses a wrong password, and a single Redis as REDIS_CLUSTER_NODES, in one line naming the variable', async () => {
    const cases: Array<[NodeJS.ProcessEnv, RegExp]> = [
      [{ REDIS_URL: `redis://:wrong@127.0.0.1:${guarded.port}` }, /^invalid configuration: REDIS_URL: Redis refuses its credentials \(WRONGPASS .*\); put the right ones in the URL/],
      [{ REDIS_URL: `redis://127.0.0.1:${guarded.port}` }, /^invalid configuration: REDIS_URL: Redis refuses its credentials \(NOAUTH /],
      [{ REDIS_CLUSTER_NODES: `127.0.0.1:${redis.port}` }, /^invalid configuration: REDIS_CLUSTER_NODES: a node is no cluster node \(ERR This instance has cluster support disabled\); for a single Redis set REDIS_URL instead$/],
    ];
    await expectOneLineRefusals(cases);
  });

  it('while its Redis turns into a replica (READONLY): serves every request, logs once at error level, counts it, shows it in /readyz', async () => {
    expect(await status()).to.equal(200);
    await withClient(redis.port, (client) => client.call('REPLICAOF', '127.0.0.1', String(other.port)));
    try {
      await waitFor(async () => (await status()) === 200 && (await misconfigurations()) >= 2, 15_000);
      const ready = await readiness();
      expect(ready.status, 'readiness does not fail: every replica would leave at once').to.equal('ready');
      expect(ready.checks.redis).to.match(/^misconfigured, counting in memory on this replica: REDIS_URL: points at a read-only replica \(READONLY /);
      expect(await errorLines(/read-only replica/), 'logged once, not per request').to.have.length(1);
    } finally {
      await withClient(redis.port, (client) => client.call('REPLICAOF', 'NO', 'ONE'));
    }
    await waitFor(async () => (await status()) === 200 && (await readiness()).checks.redis === 'ok', 15_000);
  });

  it('while its Redis starts requiring a password (NOAUTH on reconnection): the same, then back once it is fixed', async () => {
    const before = await misconfigurations();
    await withClient(redis.port, async (client) => {
      await client.config('SET', 'requirepass', PASSWORD);
      await client.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    });
    try {
      await waitFor(async () => (await status()) === 200 && (await misconfigurations()) > before, 15_000);
      const ready = await readiness();
      expect(ready.status).to.equal('ready');
      expect(ready.checks.redis).to.match(/^misconfigured, counting in memory on this replica: REDIS_URL: Redis refuses its credentials \((NOAUTH|WRONGPASS) /);
      expect(await errorLines(/refuses its credentials/)).to.have.length(1);
    } finally {
      await withClient(redis.port, (client) => client.config('SET', 'requirepass', ''), PASSWORD);
    }
    await waitFor(async () => (await status()) === 200 && (await readiness()).checks.redis === 'ok', 15_000);
  });

  // ioredis writes this warning with console.warn at every connection whose ready check may not
  // run INFO; as text on stderr it broke a log pipeline that reads JSON lines (issue 34).
  it('logs ioredis’s own warning (a user that may not run INFO) as one JSON line of the gateway’s, nothing on stderr', async () => {
    await withClient(redis.port, async (client) => {
      await client.call('ACL', 'SETUSER', 'default', '-info');
      await client.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    });
    try {
      const line = await gateway.waitForLog((logged) => /Skipping the ready check because INFO command fails/.test(String(logged.msg)));
      expect(line).to.include({ level: 40, source: 'console', occurrences: 1 });
      expect(String(line.msg)).to.match(/NOPERM/);
      expect(await status()).to.equal(200);
    } finally {
      await withClient(redis.port, (client) => client.call('ACL', 'SETUSER', 'default', '+info'));
    }
    expect(gateway.errorLines).to.deep.equal([]);
  });

  /**
   * The error-level lines matching `pattern`, once there is one: the gateway's log is written in
   * batches, so requests are sent meanwhile to fill and flush them.
   */
  async function errorLines(pattern: RegExp): Promise<unknown[]> {
    const matching = (): unknown[] => gateway.logs.filter((line) => line.level === 50 && pattern.test(String(line.msg)));
    await waitFor(async () => (await status()) === 200 && matching().length > 0, 15_000);
    return matching();
  }

  async function status(): Promise<number> {
    const response = await fetch(`${replicas.urls[0]}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${replicaSecret('steady')}` } });
    await response.arrayBuffer();
    return response.status;
  }

  async function readiness(): Promise<{ status: string; checks: Record<string, string> }> {
    return (await (await fetch(`http://127.0.0.1:${gateway.adminPort}/readyz`)).json()) as { status: string; checks: Record<string, string> };
  }

  async function misconfigurations(): Promise<number> {
    const metrics = await (await fetch(`http://127.0.0.1:${gateway.adminPort}/metrics`)).text();
    return Number(/^rate_limiter_redis_misconfigurations_total (\d+)$/m.exec(metrics)?.[1]);
  }
});
