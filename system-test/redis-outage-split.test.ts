import { expect } from 'chai';
import { get } from 'node:http';
import { Redis } from 'ioredis';
import { fetchWithinContract } from './support/openapi-validator';
import { freePort, type RedisServer, startRedisOrSkip } from './support/redis-server';
import { burstWithinOneMinute, replicaSecret, type ReplicaSet, startReplicaSet } from './support/replica-set';
import type { ServiceProcess } from './support/service-process';
import { waitFor } from './support/wait-for';

/** A gauge of a gateway's (or, with workers, its primary's) /metrics. */
async function gauge(gateway: ServiceProcess, name: string): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${gateway.adminPort}/metrics`)).text();
  const value = new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1];
  return value === undefined ? undefined : Number(value);
}

const replicasInUse = (gateway: ServiceProcess) => gauge(gateway, 'rate_limiter_fallback_replicas');

/** Resolves once every gateway's heartbeat counts `count` processes. */
async function untilCounted(gateways: readonly ServiceProcess[], count: number): Promise<void> {
  let seen: Array<number | undefined> = [];
  await waitFor(
    async () => (seen = await Promise.all(gateways.map(replicasInUse))).every((value) => value === count),
    20_000,
    () => `rate_limiter_fallback_replicas: ${seen.join(', ')}`,
  );
}

/** A GET on a connection of its own (no agent), resolving once its answer has been read. */
function getOnNewConnection(url: string, headers: Record<string, string>): Promise<void> {
  return new Promise((resolve, reject) => {
    get(url, { headers, agent: false }, (response) => response.resume().on('end', resolve)).on('error', reject);
  });
}

/** `/readyz`'s `redis` check of every gateway. */
async function redisChecks(gateways: readonly ServiceProcess[]): Promise<string[]> {
  return Promise.all(
    gateways.map(async (gateway) => {
      const body = (await (await fetch(`http://127.0.0.1:${gateway.adminPort}/readyz`)).json()) as { checks: Record<string, string> };
      return body.checks.redis ?? '';
    }),
  );
}

/** SIGKILLs the server, as a crash or an OOM kill would end it, and waits until every gateway has lost it. */
async function killRedis(redis: RedisServer, gateways: readonly ServiceProcess[]): Promise<void> {
  process.kill(redis.pid, 'SIGKILL');
  await waitFor(async () => (await redisChecks(gateways)).every((check) => check.startsWith('degraded')), 15_000);
}

/** Restarts the server, then sends requests until every gateway counts in Redis again. */
async function restartRedis(redis: RedisServer, urls: readonly string[], gateways: readonly ServiceProcess[], keyId: string): Promise<void> {
  await redis.restart();
  const headers = { Authorization: `Bearer ${replicaSecret(keyId)}` };
  await waitFor(async () => {
    // A connection each, so that every worker of GATEWAY_WORKERS gets one: a worker leaves the
    // fallback on its own next request.
    await Promise.all(
      urls.flatMap((url) => [0, 1, 2, 3].map(() => getOnNewConnection(`${url}/v1/pets?limit=1`, headers))),
    );
    // /readyz is the primary's; its gauge is 1 while any worker is still in the fallback.
    const back = (await redisChecks(gateways)).every((check) => check === 'ok');
    return back && (await Promise.all(gateways.map((gateway) => gauge(gateway, 'rate_limiter_fallback')))).every((value) => value === 0);
  }, 15_000);
}

async function registrySize(redis: RedisServer): Promise<number> {
  const client = new Redis(redis.url);
  try {
    return await client.zcard('{rl:replicas}');
  } finally {
    client.disconnect();
  }
}

/** A private Redis and `count` gateways on it, for the enclosing suite: read them inside its tests. */
function redisAndGateways(count: number, keys: Parameters<typeof startReplicaSet>[1], env: NodeJS.ProcessEnv): { redis: RedisServer; replicas: ReplicaSet } {
  const stack = {} as { redis: RedisServer; replicas: ReplicaSet };
  before(async function () {
    stack.redis = await startRedisOrSkip(this);
    // SIGKILL closes the connections at once; the longer timeout keeps a loaded machine's slow
    // replies from falling back by themselves in the bursts counted in Redis.
    stack.replicas = await startReplicaSet(count, keys, { REDIS_URL: stack.redis.url, REDIS_COMMAND_TIMEOUT_MS: '1000', ...env });
  });
  after(async () => {
    await stack.replicas?.stop();
    await stack.redis?.stop();
  });
  return stack;
}

const FRESH = ['fresh-1', 'fresh-2', 'fresh-3'];
const ODD = ['odd-1', 'odd-2', 'odd-3'];
const AFTER = ['after-1', 'after-2', 'after-3'];
const ROOMY = { plan: 'enterprise' as const, limits: { perMinute: 1_000_000, perDay: 100_000_000 } };

describe('a Redis outage under three gateways: each enforces a third of every limit', function () {
  this.timeout(120_000);
  const stack = redisAndGateways(
    3,
    [
      ...[...FRESH, ...AFTER, 'probe'].map((id) => ({ id, plan: 'free' as const })),
      ...ODD.map((id) => ({ id, plan: 'enterprise' as const, limits: { perMinute: 10, perDay: 1000 } })),
      { id: 'steady', ...ROOMY },
    ],
    {},
  );

  it('counts the three gateways by their heartbeat in Redis', async () => {
    await untilCounted(stack.replicas.gateways, 3);
    expect(await registrySize(stack.redis)).to.equal(3);
  });

  it('admits a fresh key\'s plan limit across the three once Redis is SIGKILLed (at most limit + 2: ⌈limit ÷ 3⌉ each), and says so in the headers', async () => {
    await killRedis(stack.redis, stack.replicas.gateways);
    const [free, odd] = await Promise.all([burstWithinOneMinute(stack.replicas.urls, FRESH, 90), burstWithinOneMinute(stack.replicas.urls, ODD, 90)]);
    console.log(`      Redis killed: free (60/min) admitted ${free.admitted} of 90; 10/min admitted ${odd.admitted} of 90`);
    expect(free.admitted, `60 ÷ 3 = 20 on each gateway, with no rounding: ${free.summary}`).to.equal(60);
    expect(odd.admitted, `⌈10 ÷ 3⌉ = 4 on each: 12, within 10 + 2: ${odd.summary}`).to.equal(12);
    expect([...free.limits]).to.deep.equal(['20']);
    expect([...odd.limits]).to.deep.equal(['4']);
    for (const url of stack.replicas.urls) {
      const response = await fetchWithinContract(`${url}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${replicaSecret('probe')}` } });
      expect(response.status).to.equal(200);
      expect(response.headers.get('ratelimit-policy')).to.equal('"minute";q=20;w=60, "day";q=334;w=86400');
      expect(response.headers.get('x-ratelimit-remaining')).to.equal('19');
    }
    for (const gateway of stack.replicas.gateways) {
      expect(await replicasInUse(gateway), 'the last count, kept through the outage').to.equal(3);
      expect(await gauge(gateway, 'rate_limiter_fallback')).to.equal(1);
      const line = await gateway.waitForLog((log) => /Redis unavailable/.test(String(log.msg)));
      expect(line.splitOver).to.equal(3);
    }
  });

  it('counts in Redis again once it is back, and the heartbeat fills the new registry', async () => {
    await restartRedis(stack.redis, stack.replicas.urls, stack.replicas.gateways, 'steady');
    const { admitted, summary, limits } = await burstWithinOneMinute(stack.replicas.urls, AFTER, 90);
    expect(admitted, `one shared count of 60: ${summary}`).to.equal(60);
    expect([...limits]).to.deep.equal(['60']);
    await waitFor(async () => (await registrySize(stack.redis)) === 3, 15_000);
    for (const gateway of stack.replicas.gateways) expect(await replicasInUse(gateway)).to.equal(3);
  });

  it('has a gateway that starts while Redis is down assume RATE_LIMIT_FALLBACK_REPLICAS gateways', async () => {
    const gateway = await stack.replicas.addGateway({ REDIS_URL: `redis://127.0.0.1:${await freePort()}`, REDIS_STARTUP_WAIT_MS: '300', RATE_LIMIT_FALLBACK_REPLICAS: '4' });
    const response = await fetchWithinContract(`${stack.replicas.urls.at(-1)!}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${replicaSecret('probe')}` } });
    expect(response.headers.get('x-ratelimit-limit'), '60 ÷ 4').to.equal('15');
    expect(await replicasInUse(gateway)).to.equal(4);
  });

  it('keeps every limit whole on each gateway with RATE_LIMIT_FALLBACK=full, as before', async () => {
    const gateway = await stack.replicas.addGateway({ REDIS_URL: `redis://127.0.0.1:${await freePort()}`, REDIS_STARTUP_WAIT_MS: '300', RATE_LIMIT_FALLBACK: 'full' });
    const response = await fetchWithinContract(`${stack.replicas.urls.at(-1)!}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${replicaSecret('probe')}` } });
    expect(response.headers.get('x-ratelimit-limit')).to.equal('60');
    expect(await replicasInUse(gateway)).to.equal(1);
  });
});

describe('a Redis outage under one gateway with GATEWAY_WORKERS=2: each worker is a counting process', function () {
  this.timeout(120_000);
  const stack = redisAndGateways(1, [...[...FRESH, ...AFTER].map((id) => ({ id, plan: 'free' as const })), { id: 'steady', ...ROOMY }], {
    GATEWAY_WORKERS: '2',
  });

  it('counts both workers, not the primary, and splits every limit in two while Redis is SIGKILLed', async () => {
    await untilCounted(stack.replicas.gateways, 2);
    expect(await registrySize(stack.redis), 'the workers beat; the primary counts no request').to.equal(2);
    await killRedis(stack.redis, stack.replicas.gateways);
    const { admitted, limits } = await burstWithinOneMinute(stack.replicas.urls, FRESH, 90);
    console.log(`      Redis killed: free (60/min) admitted ${admitted} of 90 by two workers`);
    expect([...limits], '60 ÷ 2 on each worker').to.deep.equal(['30']);
    expect(admitted, 'both workers admitted, and together at most 60 (no rounding with 2)').to.be.within(31, 60);
  });

  it('counts in Redis again once it is back, and both workers beat into the new registry', async () => {
    await restartRedis(stack.redis, stack.replicas.urls, stack.replicas.gateways, 'steady');
    const { admitted, summary } = await burstWithinOneMinute(stack.replicas.urls, AFTER, 90);
    expect(admitted, summary).to.equal(60);
    await waitFor(async () => (await registrySize(stack.redis)) === 2, 15_000);
    expect(await replicasInUse(stack.replicas.gateways[0]!)).to.equal(2);
  });
});
