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
 *
 * `--topology cluster` puts the Redis gateway on a three-master Redis Cluster (REDIS_CLUSTER_NODES)
 * instead of one Redis; `--topology both` runs a gateway on each, side by side in the same
 * alternating rounds, and reports the cluster's cost per request against the single Redis's
 * (target: within 15 %).
 */
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { parseArgs } from 'node:util';
import { findRedisServer, startRedisServer, totalCommandCalls } from '../system-test/support/redis-server';
import { startRedisCluster } from '../system-test/support/redis-topologies';
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

/** The gateways measured: `memory` always, and one per Redis topology. */
type Store = 'memory' | 'redis' | 'cluster';

/**
 * Requests per second of each gateway on `path`, over rounds that run the stores forwards then
 * backwards, so drift in the machine's speed falls on all alike.
 */
async function compare(gateways: Partial<Record<Store, string>>, path: string, expectedStatus: 200 | 404): Promise<Partial<Record<Store, number>>> {
  const stores = Object.keys(gateways) as Store[];
  for (const store of stores) await load(`${gateways[store]}${path}`, 'bench', 2);
  const totals = Object.fromEntries(stores.map((store) => [store, { requests: 0, seconds: 0 }])) as Record<Store, { requests: number; seconds: number }>;
  const order = Array.from({ length: REPEATS }, () => [...stores, ...stores.toReversed()]).flat();
  for (const store of order) {
    const result = await load(`${gateways[store]!}${path}`, 'bench', ROUND_SECONDS);
    const expected = result.statusCodeStats?.[`${expectedStatus}`]?.count ?? 0;
    if (result.errors > 0 || expected !== result.requests.total) {
      throw new Error(`${store} ${path}: ${result.errors} errors, ${expected} of ${result.requests.total} answered ${expectedStatus}`);
    }
    totals[store].requests += result.requests.total;
    totals[store].seconds += result.duration;
    console.log(`  ${path} ${store.padEnd(7)} ${(result.requests.total / result.duration).toFixed(0)} req/s, p99 ${result.latency.p99} ms`);
  }
  const rates = Object.fromEntries(stores.map((store) => [store, totals[store].requests / totals[store].seconds]));
  console.log(`  ${path}: ${stores.map((store) => `${store} ${rates[store]!.toFixed(0)} req/s`).join(', ')}`);
  return rates;
}

/** What a store adds to each request over the in-memory limiter, in microseconds of one gateway's time. */
function addedMicroseconds(rates: Partial<Record<Store, number>>, store: Store): number {
  return 1e6 / rates[store]! - 1e6 / rates.memory!;
}

/** Bans the `flood` key, floods with it, and returns Redis commands (on every node) per rejected request. */
async function banFlood(gateway: string, stats: readonly Redis[]): Promise<number> {
  const headers = { Authorization: `Bearer ${replicaSecret('flood')}` };
  let code = '';
  for (let i = 0; i < 100 && code !== 'api_key_banned'; i += 1) {
    const response = await fetch(`${gateway}${PETS}`, { headers });
    code = response.status === 200 ? 'ok' : ((await response.json()) as { code: string }).code;
  }
  if (code !== 'api_key_banned') throw new Error('the flood key did not get banned');
  const calls = async (): Promise<number> => (await Promise.all(stats.map((client) => totalCommandCalls(client)))).reduce((a, b) => a + b, 0);
  const before = await calls();
  const flood = await load(`${gateway}${PETS}`, 'flood', FLOOD_SECONDS);
  const commands = (await calls()) - before;
  const rejected = flood.statusCodeStats?.['429']?.count ?? 0;
  if (rejected === 0 || rejected !== flood.requests.total) throw new Error(`flood: ${rejected} of ${flood.requests.total} rejected`);
  console.log(`  ban flood: ${rejected} rejected requests (${(rejected / flood.duration).toFixed(0)} req/s), ${commands} Redis commands`);
  return commands / rejected;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { topology: { type: 'string', default: 'standalone' } } });
  const topology = values.topology;
  if (topology !== 'standalone' && topology !== 'cluster' && topology !== 'both') throw new Error('--topology: standalone, cluster or both');
  const binary = findRedisServer();
  if (binary === undefined) throw new Error('redis-server not found: install Debian package redis-server');
  const redis = topology === 'cluster' ? undefined : await startRedisServer(binary);
  const cluster = topology === 'standalone' ? undefined : await startRedisCluster();
  const replicas = await startReplicaSet(
    0,
    [
      { id: 'bench', plan: 'enterprise', limits: { perMinute: 1_000_000_000, perDay: 1_000_000_000 } },
      { id: 'flood', plan: 'enterprise', limits: { perMinute: 1, perDay: 1_000_000 } },
    ],
    {},
  );
  const stats = [
    ...(redis === undefined ? [] : [new Redis(redis.url)]),
    ...(cluster?.nodes.map((node) => new Redis(node.url)) ?? []),
  ];
  try {
    await replicas.addGateway({ REDIS_URL: '' });
    const gateways: Partial<Record<Store, string>> = { memory: replicas.urls.at(-1)! };
    if (redis !== undefined) {
      await replicas.addGateway({ REDIS_URL: redis.url });
      gateways.redis = replicas.urls.at(-1)!;
    }
    if (cluster !== undefined) {
      await replicas.addGateway({ REDIS_URL: '', REDIS_CLUSTER_NODES: cluster.seeds });
      gateways.cluster = replicas.urls.at(-1)!;
    }
    const rounds = REPEATS * 2 * Object.keys(gateways).length;
    console.log(`${CONNECTIONS} connections, ${rounds} rounds of ${ROUND_SECONDS} s per workload; Redis: ${topology}`);
    const endToEnd = await compare(gateways, PETS, 200);
    const limiterBound = await compare(gateways, UNROUTED, 404);

    console.log('');
    for (const store of ['redis', 'cluster'] as const) {
      if (gateways[store] === undefined) continue;
      const commandsPerRejection = await banFlood(gateways[store], stats);
      console.log(`${store}/memory throughput ratio, GET /v1/pets: ${(endToEnd[store]! / endToEnd.memory!).toFixed(3)} (target >= 0.8)`);
      console.log(`${store}/memory throughput ratio, limiter-bound 404: ${(limiterBound[store]! / limiterBound.memory!).toFixed(3)}`);
      console.log(`${store}: limiter's added cost per request, limiter-bound 404: ${addedMicroseconds(limiterBound, store).toFixed(1)} µs`);
      console.log(`${store}: Redis commands per rejected request (banned key flood): ${commandsPerRejection.toFixed(5)} (target <= 0.02)`);
    }
    if (gateways.redis !== undefined && gateways.cluster !== undefined) {
      for (const [label, rates] of [['GET /v1/pets', endToEnd], ['limiter-bound 404', limiterBound]] as const) {
        console.log(`cluster/standalone cost per request, ${label}: ${(rates.redis! / rates.cluster!).toFixed(3)} (target <= 1.15)`);
      }
    }
  } finally {
    for (const client of stats) client.disconnect();
    await replicas.stop();
    await redis?.stop();
    await cluster?.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
