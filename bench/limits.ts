/**
 * `npm run bench:limits`: what the Redis rate limiter costs, measured in one run on this machine.
 *
 * 1. Throughput: the same gateway with the in-memory limiter and with the Redis limiter, each in
 *    its own process, in front of one pet service process, loaded by autocannon with a key whose
 *    limits are never reached. Rounds alternate (memory, Redis, Redis, memory, twice) so drift in
 *    the machine's speed falls on both alike. Two workloads: `GET /v1/pets` end to end (the headline
 *    ratio, target >= 0.8), and a /v1 path the gateway answers itself with 404 after charging the
 *    limiter, where the limiter's share of the work is largest.
 * 2. Ban flood: a banned key floods the Redis gateway; INFO commandstats before and after gives
 *    Redis commands per rejected request (target <= 0.02).
 */
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { findRedisServer, startRedisServer, totalCommandCalls } from '../system-test/support/redis-server';
import { replicaSecret, startReplicaSet } from '../system-test/support/replica-set';

const ROUND_SECONDS = Number(process.env.BENCH_ROUND_SECONDS ?? 5);
const REPEATS = Number(process.env.BENCH_REPEATS ?? 2);
const FLOOD_SECONDS = Number(process.env.BENCH_FLOOD_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const PETS = '/v1/pets?limit=1';
const UNROUTED = '/v1/bench-unrouted';

function load(url: string, keyId: string, seconds: number): Promise<autocannon.Result> {
  return autocannon({
    url,
    connections: CONNECTIONS,
    duration: seconds,
    headers: { authorization: `Bearer ${replicaSecret(keyId)}` },
  });
}

/** Requests per second of each gateway on `path`, over alternating rounds. */
async function compare(gateways: { memory: string; redis: string }, path: string, expectedStatus: 200 | 404): Promise<number> {
  await load(`${gateways.memory}${path}`, 'bench', 2);
  await load(`${gateways.redis}${path}`, 'bench', 2);
  const totals = { memory: { requests: 0, seconds: 0 }, redis: { requests: 0, seconds: 0 } };
  const order = Array.from({ length: REPEATS }, () => ['memory', 'redis', 'redis', 'memory'] as const).flat();
  for (const store of order) {
    const result = await load(`${gateways[store]}${path}`, 'bench', ROUND_SECONDS);
    const expected = result.statusCodeStats?.[`${expectedStatus}`]?.count ?? 0;
    if (result.errors > 0 || expected !== result.requests.total) {
      throw new Error(`${store} ${path}: ${result.errors} errors, ${expected} of ${result.requests.total} answered ${expectedStatus}`);
    }
    totals[store].requests += result.requests.total;
    totals[store].seconds += result.duration;
    console.log(`  ${path} ${store.padEnd(6)} ${(result.requests.total / result.duration).toFixed(0)} req/s, p99 ${result.latency.p99} ms`);
  }
  const memory = totals.memory.requests / totals.memory.seconds;
  const redis = totals.redis.requests / totals.redis.seconds;
  console.log(`  ${path}: memory ${memory.toFixed(0)} req/s, redis ${redis.toFixed(0)} req/s`);
  return redis / memory;
}

/** Bans the `flood` key, floods with it, and returns Redis commands per rejected request. */
async function banFlood(gateway: string, stats: Redis): Promise<number> {
  const headers = { Authorization: `Bearer ${replicaSecret('flood')}` };
  let code = '';
  for (let i = 0; i < 100 && code !== 'api_key_banned'; i += 1) {
    const response = await fetch(`${gateway}${PETS}`, { headers });
    code = response.status === 200 ? 'ok' : ((await response.json()) as { code: string }).code;
  }
  if (code !== 'api_key_banned') throw new Error('the flood key did not get banned');
  const before = await totalCommandCalls(stats);
  const flood = await load(`${gateway}${PETS}`, 'flood', FLOOD_SECONDS);
  const commands = (await totalCommandCalls(stats)) - before;
  const rejected = flood.statusCodeStats?.['429']?.count ?? 0;
  if (rejected === 0 || rejected !== flood.requests.total) throw new Error(`flood: ${rejected} of ${flood.requests.total} rejected`);
  console.log(`  ban flood: ${rejected} rejected requests (${(rejected / flood.duration).toFixed(0)} req/s), ${commands} Redis commands`);
  return commands / rejected;
}

async function main(): Promise<void> {
  const binary = findRedisServer();
  if (binary === undefined) throw new Error('redis-server not found: install Debian package redis-server');
  const redis = await startRedisServer(binary);
  const replicas = await startReplicaSet(
    0,
    [
      { id: 'bench', plan: 'enterprise', limits: { perMinute: 1_000_000_000, perDay: 1_000_000_000 } },
      { id: 'flood', plan: 'enterprise', limits: { perMinute: 1, perDay: 1_000_000 } },
    ],
    {},
  );
  const stats = new Redis(redis.url);
  try {
    await replicas.addGateway({ REDIS_URL: '' });
    await replicas.addGateway({ REDIS_URL: redis.url });
    const gateways = { memory: replicas.urls[0]!, redis: replicas.urls[1]! };
    console.log(`${CONNECTIONS} connections, ${4 * REPEATS} rounds of ${ROUND_SECONDS} s per workload`);
    const endToEnd = await compare(gateways, PETS, 200);
    const limiterBound = await compare(gateways, UNROUTED, 404);
    const commandsPerRejection = await banFlood(gateways.redis, stats);

    console.log('');
    console.log(`redis/memory throughput ratio, GET /v1/pets: ${endToEnd.toFixed(3)} (target >= 0.8)`);
    console.log(`redis/memory throughput ratio, limiter-bound 404: ${limiterBound.toFixed(3)}`);
    console.log(`Redis commands per rejected request (banned key flood): ${commandsPerRejection.toFixed(5)} (target <= 0.02)`);
  } finally {
    stats.disconnect();
    await replicas.stop();
    await redis.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
