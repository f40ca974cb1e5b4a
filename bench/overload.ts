/**
 * `npm run bench:overload`: does the stack keep its goodput when offered three times what it can
 * serve, and refuse the excess fast instead of timing it out?
 *
 * The stack of issue 33: two pet services (their builds, the production defaults but
 * `STORE_MAX_CONCURRENT_WRITES=1`, which docs/mongodb.md sets for FerretDB's SQLite handler) on one
 * private FerretDB with its SQLite handler (or `MONGODB_URI`), and a gateway balancing over both,
 * with a key whose limits no run reaches. An open-loop generator (bench/open-loop.ts) sends a mix
 * of lists (random `status`), gets of seeded ids and creates with an `Idempotency-Key`:
 * 1. the sustainable rate: steps of `BENCH_STEP_SECONDS` at rising rates, then halving the gap,
 *    until the highest rate at which at least 99% of answers are successes and their p99 stays
 *    under `BENCH_SUSTAINABLE_P99_MS`; its goodput is the sustainable rate;
 * 2. overload: `BENCH_OVERLOAD_FACTOR` (3) times that rate for `BENCH_OVERLOAD_SECONDS` (30).
 * It prints the overload's goodput as a fraction of the sustainable rate (target >= 0.8), the p99
 * of its refusals (503 `over capacity`; target < 50 ms) and the share of 504s among its answers
 * (target < 1%), with what the pet services answered.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { sha256Hex } from '../gateway/src/keys/api-keys';
import { startMongoOrSkip } from '../system-test/support/mongo-server';
import { type ServiceProcess, startService } from '../system-test/support/service-process';
import { PET_SERVICE_NODE_FLAGS, stopCollectingLogs } from './list-pets-load';
import { type Outcome, type PlannedRequest, quantile, runOpenLoop } from './open-loop';

const STEP_SECONDS = Number(process.env.BENCH_STEP_SECONDS ?? 10);
/** `BENCH_SUSTAINABLE=<requests/s>`: skip the search and overload that rate's multiple (to compare settings). */
const KNOWN_SUSTAINABLE = process.env.BENCH_SUSTAINABLE === undefined ? undefined : Number(process.env.BENCH_SUSTAINABLE);
const START_RATE = Number(process.env.BENCH_START_RATE ?? 10);
const SUSTAINABLE_P99_MS = Number(process.env.BENCH_SUSTAINABLE_P99_MS ?? 1000);
const OVERLOAD_FACTOR = Number(process.env.BENCH_OVERLOAD_FACTOR ?? 3);
const OVERLOAD_SECONDS = Number(process.env.BENCH_OVERLOAD_SECONDS ?? 30);
const SEED_PETS = Number(process.env.BENCH_OVERLOAD_PETS ?? 1000);
/** Shares of lists, gets and creates in the mix. */
const MIX = { list: 0.4, get: 0.45, create: 0.15 };
/** Pet service settings over the defaults, as `NAME=value,NAME=value` (to try other bounds). */
const PET_SERVICE_SETTINGS = Object.fromEntries(
  (process.env.BENCH_PET_SERVICE_ENV ?? '')
    .split(',')
    .filter((pair) => pair !== '')
    .map((pair) => pair.split('=') as [string, string]),
);
/**
 * `BENCH_STORE_CPU=own` (the default on two cores or more): FerretDB on the first CPU alone, the
 * services and this generator on the others, as in production, where the store runs on nodes of
 * its own. Sharing every CPU (`shared`), the refusals' work in the gateway, the pet services and
 * the generator takes CPU from the store itself, which no deployment does: the goodput lost
 * then is the test machine's, not the shedding's (docs/performance.md#overload-npm-run-benchoverload).
 */
const STORE_CPU = process.env.BENCH_STORE_CPU ?? (cpus().length >= 2 ? 'own' : 'shared');
if (STORE_CPU !== 'own' && STORE_CPU !== 'shared') {
  console.error(`BENCH_STORE_CPU: own or shared, not ${STORE_CPU}`);
  process.exit(1);
}
/** Clients give up on a request after this long (well past the gateway's 2 s deadline). */
const CLIENT_TIMEOUT_MS = 10_000;
const SECRET = 'bench-overload-secret';
const STATUSES = ['available', 'pending', 'sold'] as const;

/** The mix, one request at a time; ids of gets come from the seeded pets. */
function workload(): () => PlannedRequest {
  const headers = { authorization: `Bearer ${SECRET}` };
  const json = { ...headers, 'content-type': 'application/json' };
  return () => {
    const draw = Math.random();
    if (draw < MIX.list) {
      const status = Math.floor(Math.random() * (STATUSES.length + 1));
      const filter = status === STATUSES.length ? '' : `&status=${STATUSES[status]}`;
      return { kind: 'list', method: 'GET', path: `/v1/pets?limit=20${filter}`, headers };
    }
    if (draw < MIX.list + MIX.get) return { kind: 'get', method: 'GET', path: `/v1/pets/${1 + Math.floor(Math.random() * SEED_PETS)}`, headers };
    const body = JSON.stringify({ name: 'Overload', categoryId: 1 + Math.floor(Math.random() * 50), status: STATUSES[Math.floor(Math.random() * 3)] });
    return { kind: 'create', method: 'POST', path: '/v1/pets', headers: { ...json, 'idempotency-key': randomUUID() }, body };
  };
}

const ok = (outcome: Outcome): boolean => outcome.status >= 200 && outcome.status < 300;
const shed = (outcome: Outcome): boolean => outcome.status === 503 && outcome.body?.includes('over capacity') === true;

interface Step {
  readonly rate: number;
  readonly outcomes: Outcome[];
  readonly goodput: number;
  readonly successShare: number;
  readonly p99: number;
}

/**
 * Runs `rate` for `seconds`, after `reset` (the seeded pets alone again, no idempotency records):
 * on FerretDB every list scans the collection, so a store grown by the previous steps' creates
 * would serve each later step, the overload last, slower than the one it is compared with.
 */
async function step(baseUrl: string, rate: number, seconds: number, reset: () => Promise<void>): Promise<Step> {
  await reset();
  const outcomes = await runOpenLoop({ baseUrl, rate, seconds, next: workload(), clientTimeoutMs: CLIENT_TIMEOUT_MS });
  const succeeded = outcomes.filter(ok);
  return {
    rate,
    outcomes,
    goodput: succeeded.length / seconds,
    successShare: succeeded.length / outcomes.length,
    p99: quantile(succeeded.map((outcome) => outcome.latencyMs), 0.99),
  };
}

const sustains = (result: Step): boolean => result.successShare >= 0.99 && result.p99 <= SUSTAINABLE_P99_MS;

/** Answers by status (or client-side failure), as `200 × 512, 503 × 40`. */
function statuses(outcomes: readonly Outcome[]): string {
  const counts = new Map<string, number>();
  for (const outcome of outcomes) {
    const key = outcome.status === 0 ? (outcome.error ?? 'no answer') : `${outcome.status}${outcome.status === 503 ? (shed(outcome) ? ' (shed)' : ' (unavailable)') : ''}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([key, count]) => `${key} × ${count}`).join(', ');
}

function describeStep(label: string, result: Step): string {
  const ms = (value: number) => (Number.isNaN(value) ? '-' : value.toFixed(0));
  return `${label} ${result.rate.toFixed(1)}/s: goodput ${result.goodput.toFixed(1)}/s, ${(100 * result.successShare).toFixed(1)}% ok, success p50/p99 ${ms(quantile(result.outcomes.filter(ok).map((o) => o.latencyMs), 0.5))}/${ms(result.p99)} ms; ${statuses(result.outcomes)}`;
}

/** The samples of the counters named `names` on a /metrics page, keyed `name{labels}`. */
async function counters(port: number, names: readonly string[]): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const found = new Map<string, number>();
  for (const [, series, value] of text.matchAll(/^([a-z_]+\{[^}]*\}) (\d+(?:\.\d+)?)$/gm)) {
    if (names.some((name) => series!.startsWith(`${name}{`))) found.set(series!, Number(value));
  }
  return found;
}

/**
 * The shares of the `name` histogram's observations with `labels` (a fragment of the label list)
 * that fell at or under each of `bounds` (seconds, as its buckets' `le`), over `ports`, since
 * `before`: the servers' own view of a latency, whatever the load generator's CPU.
 */
async function sharesWithin(ports: readonly number[], name: string, labels: string, bounds: readonly string[], before: Map<string, number>[]): Promise<string> {
  const within = new Map(bounds.map((le) => [le, 0]));
  let all = 0;
  for (const [index, port] of ports.entries()) {
    for (const [series, value] of await counters(port, [`${name}_bucket`])) {
      if (!series.includes(labels)) continue;
      const count = value - (before[index]!.get(series) ?? 0);
      const le = /le="([^"]+)"/.exec(series)![1]!;
      if (within.has(le)) within.set(le, within.get(le)! + count);
      if (le === '+Inf') all += count;
    }
  }
  if (all === 0) return 'none';
  return `of ${all}, ${bounds.map((le) => `${((100 * within.get(le)!) / all).toFixed(1)}% within ${Number(le) * 1000} ms`).join(', ')}`;
}

/** What the counters of `ports` gained between `before` and now, summed over the ports, non-zero only. */
async function gained(ports: readonly number[], names: readonly string[], before: Map<string, number>[]): Promise<string[]> {
  const sum = new Map<string, number>();
  for (const [index, port] of ports.entries()) {
    for (const [series, value] of await counters(port, names)) sum.set(series, (sum.get(series) ?? 0) + value - (before[index]!.get(series) ?? 0));
  }
  return [...sum].filter(([, value]) => value > 0).sort(([a], [b]) => a.localeCompare(b)).map(([series, value]) => `${series} ${value}`);
}

/** Steps up by half until a rate is not sustained, then halves the gap twice; the best step's goodput. */
async function sustainableRate(baseUrl: string, reset: () => Promise<void>): Promise<number> {
  console.log(`\nsustainable rate: steps of ${STEP_SECONDS} s, at least 99% ok and success p99 <= ${SUSTAINABLE_P99_MS} ms`);
  let best: Step | undefined;
  let failed: Step | undefined;
  for (let rate = START_RATE; failed === undefined; rate *= 1.5) {
    const result = await step(baseUrl, rate, STEP_SECONDS, reset);
    console.log(describeStep(sustains(result) ? '  ok  ' : '  over', result));
    if (sustains(result)) best = result;
    else failed = result;
  }
  for (let halvings = 0; halvings < 2 && best !== undefined; halvings += 1) {
    const result = await step(baseUrl, (best.rate + failed.rate) / 2, STEP_SECONDS, reset);
    console.log(describeStep(sustains(result) ? '  ok  ' : '  over', result));
    if (sustains(result)) best = result;
    else failed = result;
  }
  if (best === undefined) throw new Error(`not even ${START_RATE}/s is sustainable: lower BENCH_START_RATE`);
  console.log(`sustainable: ${best.goodput.toFixed(1)} successful requests/s (offered ${best.rate.toFixed(1)}/s)`);
  return best.goodput;
}

async function main(): Promise<void> {
  const cpu = cpus();
  console.log(`cores: ${cpu.length} (${cpu[0]?.model ?? 'unknown'}), node ${process.version}, ${new Date().toISOString()}, load average ${loadavg()[0]!.toFixed(1)}`);
  const mongo = await startMongoOrSkip({ skip: () => { throw new Error('no MongoDB-wire server: set MONGODB_URI or install FerretDB (.ci/install-ferretdb.sh)'); } } as never);
  const dir = mkdtempSync(join(tmpdir(), 'bench-overload-'));
  const processes: ServiceProcess[] = [];
  const raw = new MongoClient(mongo.uri, { useBigInt64: true });
  try {
    const database = mongo.freshDatabase();
    const pets = raw.db(database).collection<{ _id: bigint; name: string; categoryId: bigint; status: string }>('pets');
    for (let from = 1; from <= SEED_PETS; from += 1000) {
      const count = Math.min(1000, SEED_PETS - from + 1);
      await pets.insertMany(Array.from({ length: count }, (_, index) => ({ _id: BigInt(from + index), name: `pet-${from + index}`, categoryId: 1n, status: STATUSES[(from + index) % 3]! })));
    }
    const keysFile = join(dir, 'keys.json');
    writeFileSync(keysFile, JSON.stringify({ keys: [{ id: 'bench', sha256: sha256Hex(SECRET), plan: 'enterprise', limits: { perMinute: 1e9, perDay: 1e9 } }] }));
    const petServiceEnv = { LOG_LEVEL: 'info', MONGODB_URI: mongo.uri, MONGODB_DB: database, STORE_MAX_CONCURRENT_WRITES: '1', ...PET_SERVICE_SETTINGS };
    const petServices = await Promise.all(
      [1, 2].map(() => startService('pet-service', petServiceEnv, { compiled: true, nodeFlags: PET_SERVICE_NODE_FLAGS })),
    );
    processes.push(...petServices);
    const gateway = await startService(
      'gateway',
      {
        LOG_LEVEL: 'info',
        API_KEYS_FILE: keysFile,
        REDIS_URL: '',
        PET_SERVICE_ADDR: `ipv4:${petServices.map(({ port }) => `127.0.0.1:${port}`).join(',')}`,
      },
      { compiled: true, nodeFlags: ['--max-semi-space-size=4', '--max-old-space-size=64'] },
    );
    processes.push(gateway);
    for (const service of processes) stopCollectingLogs(service);
    if (STORE_CPU === 'own') {
      // Every thread of each (-a); threads made later inherit their maker's CPUs.
      const pin = (pid: number, list: string): void => void execFileSync('taskset', ['-a', '-cp', list, String(pid)], { stdio: 'ignore' });
      const others = `1-${cpus().length - 1}`;
      if (mongo.pid !== undefined) pin(mongo.pid, '0');
      for (const pid of [process.pid, ...processes.map((service) => service.child.pid!)]) pin(pid, others);
    }
    const baseUrl = `http://127.0.0.1:${gateway.port}`;
    console.log(
      `${mongo.kind === 'ferretdb' ? 'FerretDB (SQLite handler)' : 'MONGODB_URI'}, ${SEED_PETS} pets; two pet services (${Object.entries({ STORE_MAX_CONCURRENT_WRITES: '1', ...PET_SERVICE_SETTINGS }).map(([name, value]) => `${name}=${value}`).join(' ')}, else defaults), one gateway`,
    );
    console.log(STORE_CPU === 'own' ? `CPUs: the store on CPU 0 alone${mongo.pid === undefined ? ' (MONGODB_URI: not pinned)' : ''}; the services and the generator on the others` : 'CPUs: shared by the store, the services and the generator');
    console.log(`mix: ${MIX.list * 100}% lists, ${MIX.get * 100}% gets, ${MIX.create * 100}% creates; open loop, clients give up after ${CLIENT_TIMEOUT_MS / 1000} s`);

    const reset = async (): Promise<void> => {
      await pets.deleteMany({ _id: { $gt: BigInt(SEED_PETS) } });
      await raw.db(database).collection('idempotency_keys').deleteMany({});
    };
    await step(baseUrl, START_RATE, 5, reset);
    const sustainable = KNOWN_SUSTAINABLE ?? (await sustainableRate(baseUrl, reset));

    const adminPorts = petServices.map(({ adminPort }) => adminPort);
    const petCounters = ['grpc_server_handled_total', 'pet_store_operations_total'];
    const before = await Promise.all(adminPorts.map((port) => counters(port, petCounters)));
    const gatewayBefore = await counters(gateway.adminPort, ['http_requests_shed_total', 'grpc_client_handled_total', 'http_request_duration_seconds_bucket']);
    const petHistogramsBefore = await Promise.all(adminPorts.map((port) => counters(port, ['grpc_server_handling_seconds_bucket'])));
    const rate = sustainable * OVERLOAD_FACTOR;
    console.log(`\noverload: ${rate.toFixed(1)}/s (${OVERLOAD_FACTOR} × sustainable) for ${OVERLOAD_SECONDS} s`);
    const overload = await step(baseUrl, rate, OVERLOAD_SECONDS, reset);
    console.log(describeStep('  ', overload));
    for (const kind of Object.keys(MIX)) {
      const ofKind = overload.outcomes.filter((outcome) => outcome.kind === kind);
      console.log(`  ${kind.padEnd(6)} ${statuses(ofKind)}`);
    }
    console.log(`  pet services: ${(await gained(adminPorts, petCounters, before)).join(', ')}`);
    console.log(`  gateway: ${(await gained([gateway.adminPort], ['http_requests_shed_total', 'grpc_client_handled_total'], [gatewayBefore])).join(', ')}`);
    const bounds = ['0.01', '0.05', '0.25', '1'];
    console.log(`  503s as the gateway timed them: ${await sharesWithin([gateway.adminPort], 'http_request_duration_seconds', 'status="503"', bounds, [gatewayBefore])}`);
    for (const method of ['ListPets', 'GetPet', 'CreatePet']) {
      const labels = `method="${method}",code="RESOURCE_EXHAUSTED"`;
      console.log(`  ${method} refusals as the pet services timed them: ${await sharesWithin(adminPorts, 'grpc_server_handling_seconds', labels, bounds, petHistogramsBefore)}`);
    }
    console.log(`  generator lag p99 ${quantile(overload.outcomes.map((outcome) => outcome.lagMs), 0.99).toFixed(1)} ms; pets now ${await pets.countDocuments()}; load average ${loadavg()[0]!.toFixed(1)}`);

    const refusals = overload.outcomes.filter(shed).map((outcome) => outcome.latencyMs);
    const timeouts = overload.outcomes.filter((outcome) => outcome.status === 504).length / overload.outcomes.length;
    const goodput = overload.goodput / sustainable;
    const verdict = (met: boolean) => (met ? 'met' : 'MISSED');
    console.log('');
    console.log(`goodput ${overload.goodput.toFixed(1)}/s = ${goodput.toFixed(2)} of sustainable (target >= 0.8: ${verdict(goodput >= 0.8)})`);
    const [p50, p90, p99] = [0.5, 0.9, 0.99].map((q) => quantile(refusals, q).toFixed(1));
    console.log(`refusals (503 over capacity): ${refusals.length}, p50/p90/p99 ${p50}/${p90}/${p99} ms (target p99 < 50 ms: ${verdict(refusals.length > 0 && quantile(refusals, 0.99) < 50)})`);
    console.log(`504s: ${(100 * timeouts).toFixed(2)}% of answers (target < 1%: ${verdict(timeouts < 0.01)})`);
  } finally {
    await Promise.all(processes.map((service) => service.stop()));
    await raw.close();
    await mongo.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
