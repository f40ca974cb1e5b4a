/**
 * `npm run bench`: the full gateway path against a bare express 5 server, side by side in one run,
 * and a route the gateway proxies to a second bare server (ROUTES_FILE) against that server alone.
 *
 * Every figure is a ratio of medians over alternating rounds (A B A B ...) after a warm-up, with
 * the same connections, duration and pipelining 1 on both sides, so drift in the machine's speed
 * falls on both alike. Servers and the load generator (autocannon, in this process) each run in
 * their own process.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { sha256Hex } from '../gateway/src/keys/api-keys';
import { createPetClient } from '../gateway/src/pet-service-client/pet-client';
import { buildBaseline } from './baseline-build';
import { cpuSeconds, listPetsFor, median, memoryMb, PET_SERVICE_NODE_FLAGS, profileFlags, seed, stopCollectingLogs } from './list-pets-load';
import { findRedisServer, startRedisServer, type RedisServer } from '../system-test/support/redis-server';
import { startService, type ServiceProcess } from '../system-test/support/service-process';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const ROUND_SECONDS = Number(process.env.BENCH_ROUND_SECONDS ?? 5);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const SOAK_SECONDS = Number(process.env.BENCH_SOAK_SECONDS ?? 60);
const SOAK_WARMUP_SECONDS = Number(process.env.BENCH_SOAK_WARMUP_SECONDS ?? 10);
/** `BENCH_FEATURE_COSTS=1`: also measure what each feature costs (bench/feature-gateway.ts). */
const FEATURE_COSTS = process.env.BENCH_FEATURE_COSTS === '1';
const FEATURES = ['limiter', 'logging', 'metrics'] as const;
/**
 * `BENCH_BASELINE=<commit>`: also build that commit's gateway (bench/baseline-build.ts) and load it
 * and this checkout's in alternating rounds, both on the same pet service, so that a change's cost
 * is measured under the same machine load.
 */
const BASELINE = process.env.BENCH_BASELINE;
/** `BENCH_BASELINE_NODE=<path>`: the baseline's gateway runs on this Node binary (an older runtime, say). */
const BASELINE_NODE = process.env.BENCH_BASELINE_NODE;
/**
 * The services run as in production: their builds (`npm run build`), with the heap sized for a
 * container (docs/operations.md). Live heap after a full GC is under 20 MB in both; without a
 * ceiling V8 lets garbage pile up to ~80 MB between major collections.
 */
const RUNTIME = {
  gateway: { compiled: true, nodeFlags: ['--max-semi-space-size=4', '--max-old-space-size=64', ...profileFlags()] },
  petService: { compiled: true, nodeFlags: [...PET_SERVICE_NODE_FLAGS, ...profileFlags()] },
};
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
/** Workers of the cluster run (GATEWAY_WORKERS, with Redis as the shared store); 1 skips that run. */
const WORKERS = Number(process.env.BENCH_WORKERS ?? cpus().length);
const SEED_PETS = 10_000;
const READ_PATH = '/v1/pets?limit=20';
const NEW_PET = '{"name":"Bench","categoryId":42,"status":"pending"}';
const SECRETS = { bench: 'bench-unlimited-secret', limited: 'bench-limited-secret' };
/** The proxied route: `/v1/upstream/pets?limit=20` reaches the upstream's `/v1/pets?limit=20`. */
const PROXY_PREFIX = '/v1/upstream';
const UPSTREAM_LIST = JSON.stringify(
  Array.from({ length: 20 }, (_, index) => ({ id: index + 1, name: `pet-${index}`, categoryId: 1 + (index % 50), status: 'available' })),
);

interface Figures {
  rps: number;
  p50: number;
  p99: number;
  /** CPU time per request, in µs, of each process group named by the target. */
  cpu: Record<string, number>;
}

interface Target {
  url: string;
  method?: 'GET' | 'POST';
  secret?: string;
  body?: string;
  expect: number;
  /** Process groups whose CPU is charged to this side (the load generator is always added). */
  processes: Record<string, () => number[]>;
}

const LOAD_GENERATOR = 'load generator';

/** A process and all its descendants (the cluster primary and its workers). */
function processTree(pid: number): number[] {
  const pids = [pid];
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    const children = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
    if (children !== '') for (const child of children.split(' ')) pids.push(...processTree(Number(child)));
  }
  return pids;
}

function cpuOf(groups: Record<string, () => number[]>): Record<string, number> {
  const own = process.cpuUsage();
  const seconds: Record<string, number> = { [LOAD_GENERATOR]: (own.user + own.system) / 1e6 };
  for (const [name, pids] of Object.entries(groups)) seconds[name] = pids().reduce((sum, pid) => sum + cpuSeconds(pid), 0);
  return seconds;
}

async function load(target: Target, seconds: number): Promise<Figures> {
  const cpuBefore = cpuOf(target.processes);
  const result = await autocannon({
    url: target.url,
    method: target.method ?? 'GET',
    connections: CONNECTIONS,
    pipelining: 1,
    duration: seconds,
    body: target.body,
    headers: {
      ...(target.secret === undefined ? {} : { authorization: `Bearer ${target.secret}` }),
      ...(target.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
  });
  const expected = result.statusCodeStats?.[String(target.expect) as '200']?.count ?? 0;
  if (result.errors > 0 || expected !== result.requests.total) {
    throw new Error(`${target.method ?? 'GET'} ${target.url}: ${result.errors} errors, ${expected}/${result.requests.total} were ${target.expect}`);
  }
  const cpuAfter = cpuOf(target.processes);
  const cpu: Record<string, number> = {};
  for (const name in cpuAfter) cpu[name] = ((cpuAfter[name]! - cpuBefore[name]!) * 1e6) / result.requests.total;
  return { rps: result.requests.total / result.duration, p50: result.latency.p50, p99: result.latency.p99, cpu };
}

/** Alternating rounds of `a` and `b` after a warm-up of each; the medians of each side. */
async function compare(name: string, a: Target, b: Target, labels = ['gateway', 'bare']): Promise<{ a: Figures; b: Figures }> {
  await load(a, WARMUP_SECONDS);
  await load(b, WARMUP_SECONDS);
  const runs: { a: Figures[]; b: Figures[] } = { a: [], b: [] };
  for (let round = 0; round < ROUNDS; round += 1) {
    runs.a.push(await load(a, ROUND_SECONDS));
    runs.b.push(await load(b, ROUND_SECONDS));
  }
  const summarise = (figures: Figures[]): Figures => ({
    rps: median(figures.map((f) => f.rps)),
    p50: median(figures.map((f) => f.p50)),
    p99: median(figures.map((f) => f.p99)),
    cpu: Object.fromEntries(Object.keys(figures[0]!.cpu).map((key) => [key, median(figures.map((f) => f.cpu[key]!))])),
  });
  const result = { a: summarise(runs.a), b: summarise(runs.b) };
  const show = (label: string, f: Figures) => `${label} ${f.rps.toFixed(0)} req/s, p50 ${f.p50} ms, p99 ${f.p99} ms`;
  const showCpu = (f: Figures) => Object.entries(f.cpu).map(([key, micros]) => `${key} ${micros.toFixed(0)}`).join(', ');
  console.log(`${name}: ${show(labels[0]!, result.a)} | ${show(labels[1]!, result.b)}`);
  console.log(`${' '.repeat(name.length)}  CPU µs per request: ${showCpu(result.a)} | ${showCpu(result.b)}`);
  return result;
}

/** So that the next peak covers the read run alone, not seeding or start-up (proc(5), clear_refs). */
function resetPeak(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

/** Calls the pet service has completed, by its own count: the evidence that 429s stop at the gateway. */
async function petServiceCalls(adminPort: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
  let total = 0;
  for (const [, count] of text.matchAll(/^grpc_server_handled_total\{[^}]*\} (\d+)$/gm)) total += Number(count);
  return total;
}

async function main(): Promise<void> {
  const cpu = cpus();
  console.log(`cores: ${cpu.length} (${cpu[0]?.model ?? 'unknown'}), node ${process.version}`);
  console.log(`${CONNECTIONS} connections, pipelining 1, ${ROUNDS} alternating rounds of ${ROUND_SECONDS} s after ${WARMUP_SECONDS} s warm-up`);
  console.log(`gateway: node ${RUNTIME.gateway.nodeFlags.join(' ')} gateway/dist/main.js; pet service: node ${RUNTIME.petService.nodeFlags.join(' ')} pet-service/dist/main.js`);

  const dir = mkdtempSync(join(tmpdir(), 'bench-'));
  const keysFile = join(dir, 'keys.json');
  writeFileSync(
    keysFile,
    JSON.stringify({
      keys: [
        { id: 'bench', sha256: sha256Hex(SECRETS.bench), plan: 'enterprise', limits: { perMinute: 1e9, perDay: 1e9 } },
        { id: 'limited', sha256: sha256Hex(SECRETS.limited), plan: 'free', limits: { perMinute: 1, perDay: 1 } },
      ],
    }),
  );

  const processes: ServiceProcess[] = [];
  let redis: RedisServer | undefined;
  const routesFile = join(dir, 'routes.yaml');
  const gatewayEnv = (petService: ServiceProcess) => ({
    PET_SERVICE_ADDR: `127.0.0.1:${petService.port}`,
    API_KEYS_FILE: keysFile,
    ROUTES_FILE: routesFile,
    REDIS_URL: '',
    BAN_THRESHOLD: '1000000000',
    LOG_LEVEL: 'info',
  });
  try {
    // The proxied route's upstream: a bare server of its own, so that neither side shares a process.
    writeFileSync(join(dir, 'upstream-list.json'), UPSTREAM_LIST);
    const upstream = await startService('bare-server', {
      BARE_LIST_BODY_FILE: join(dir, 'upstream-list.json'),
      BARE_CREATED_BODY_FILE: join(dir, 'upstream-list.json'),
    });
    processes.push(upstream);
    writeFileSync(
      routesFile,
      `routes:\n  - prefix: ${PROXY_PREFIX}\n    upstream: http://127.0.0.1:${upstream.port}/v1\n    methods: [GET]\n    timeoutMs: 5000\n`,
    );
    // Pinned empty whatever the caller's environment says: the issue measures the embedded store
    // and the in-memory limiter.
    const petService = await startService('pet-service', { LOG_LEVEL: 'info', MONGODB_URI: '' }, RUNTIME.petService);
    processes.push(petService);
    await seed(petService.port, SEED_PETS);
    const gateway = await startService('gateway', gatewayEnv(petService), RUNTIME.gateway);
    processes.push(gateway);
    const gatewayUrl = `http://127.0.0.1:${gateway.port}`;

    const listResponse = await fetch(`${gatewayUrl}${READ_PATH}`, { headers: { authorization: `Bearer ${SECRETS.bench}` } });
    writeFileSync(join(dir, 'list.json'), await listResponse.text());
    const created = await fetch(`${gatewayUrl}/v1/pets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SECRETS.bench}`, 'content-type': 'application/json' },
      body: NEW_PET,
    });
    writeFileSync(join(dir, 'created.json'), await created.text());
    const bare = await startService('bare-server', {
      BARE_LIST_BODY_FILE: join(dir, 'list.json'),
      BARE_CREATED_BODY_FILE: join(dir, 'created.json'),
    });
    processes.push(bare);
    const bareUrl = `http://127.0.0.1:${bare.port}`;
    await fetch(`${gatewayUrl}${READ_PATH}`, { headers: { authorization: `Bearer ${SECRETS.limited}` } });
    for (const service of processes) stopCollectingLogs(service);

    const proxied = { gateway: () => [gateway.child.pid!], 'pet service': () => [petService.child.pid!] };
    const direct = { bare: () => [bare.child.pid!] };
    const gatewayRead: Target = { url: `${gatewayUrl}${READ_PATH}`, secret: SECRETS.bench, expect: 200, processes: proxied };
    const bareRead: Target = { url: `${bareUrl}${READ_PATH}`, expect: 200, processes: direct };
    const gatewayWrite: Target = { url: `${gatewayUrl}/v1/pets`, method: 'POST', secret: SECRETS.bench, body: NEW_PET, expect: 201, processes: proxied };
    const bareWrite: Target = { url: `${bareUrl}/v1/pets`, method: 'POST', body: NEW_PET, expect: 201, processes: direct };

    // Leak check first, while the store holds a fixed 10,000 pets: reads allocate nothing that lasts.
    await load(gatewayRead, SOAK_WARMUP_SECONDS);
    const afterWarmup = { gateway: memoryMb(gateway.child.pid!), petService: memoryMb(petService.child.pid!) };
    await load(gatewayRead, SOAK_SECONDS);
    const afterSoak = { gateway: memoryMb(gateway.child.pid!), petService: memoryMb(petService.child.pid!) };

    resetPeak(gateway.child.pid!);
    resetPeak(petService.child.pid!);
    const read = await compare('read   GET /v1/pets?limit=20', gatewayRead, bareRead);
    const peak = { gateway: memoryMb(gateway.child.pid!).peak, petService: memoryMb(petService.child.pid!).peak };
    const write = await compare('write  POST /v1/pets', gatewayWrite, bareWrite);
    const callsBefore = await petServiceCalls(petService.adminPort);
    const reject = await compare('reject GET over the limit (429)', { ...gatewayRead, secret: SECRETS.limited, expect: 429 }, bareRead);
    const rejectedCalls = (await petServiceCalls(petService.adminPort)) - callsBefore;
    const proxy = await compare(
      `proxy  GET ${PROXY_PREFIX}/pets?limit=20`,
      { url: `${gatewayUrl}${PROXY_PREFIX}/pets?limit=20`, secret: SECRETS.bench, expect: 200, processes: { gateway: () => [gateway.child.pid!], upstream: () => [upstream.child.pid!] } },
      { url: `http://127.0.0.1:${upstream.port}${READ_PATH}`, expect: 200, processes: { upstream: () => [upstream.child.pid!] } },
    );
    const grpc = await grpcAlone(petService);
    if (BASELINE !== undefined) {
      const baseline = await startService('gateway', gatewayEnv(petService), {
        ...RUNTIME.gateway,
        script: join(buildBaseline(BASELINE), 'gateway', 'dist', 'main.js'),
        node: BASELINE_NODE,
      });
      processes.push(baseline);
      stopCollectingLogs(baseline);
      const url = `http://127.0.0.1:${baseline.port}`;
      const groups = { gateway: () => [baseline.child.pid!], 'pet service': () => [petService.child.pid!] };
      const labels = ['this checkout', `baseline ${BASELINE}${BASELINE_NODE === undefined ? '' : ` on ${execFileSync(BASELINE_NODE, ['--version']).toString().trim()}`}`];
      console.log('');
      console.log(`this checkout's gateway against baseline ${BASELINE}'s, on the same pet service`);
      await compare('read   GET /v1/pets?limit=20', gatewayRead, { ...gatewayRead, url: `${url}${READ_PATH}`, processes: groups }, labels);
      await compare('write  POST /v1/pets', gatewayWrite, { ...gatewayWrite, url: `${url}/v1/pets`, processes: groups }, labels);
      await baseline.stop();
    }
    await gateway.stop();
    if (FEATURE_COSTS) await featureCosts(petService, gatewayEnv(petService), processes);

    let cluster: { read: { a: Figures; b: Figures }; write: { a: Figures; b: Figures } } | undefined;
    if (WORKERS > 1) {
      const binary = findRedisServer();
      if (binary === undefined) throw new Error('redis-server not found: GATEWAY_WORKERS needs Redis (or set BENCH_WORKERS=1)');
      redis = await startRedisServer(binary);
      const workers = await startService('gateway', { ...gatewayEnv(petService), REDIS_URL: redis.url, GATEWAY_WORKERS: String(WORKERS) }, RUNTIME.gateway);
      processes.push(workers);
      stopCollectingLogs(workers);
      const url = `http://127.0.0.1:${workers.port}`;
      const groups = { gateway: () => processTree(workers.child.pid!), 'pet service': () => [petService.child.pid!], redis: () => [redis!.pid] };
      console.log('');
      console.log(`GATEWAY_WORKERS=${WORKERS}: a cluster primary and ${WORKERS} workers sharing the port, counters in a local redis-server`);
      cluster = {
        read: await compare('read   GET /v1/pets?limit=20', { ...gatewayRead, url: `${url}${READ_PATH}`, processes: groups }, bareRead),
        write: await compare('write  POST /v1/pets', { ...gatewayWrite, url: `${url}/v1/pets`, processes: groups }, bareWrite),
      };
    }

    const growth = (name: 'gateway' | 'petService') => (afterSoak[name].rss / afterWarmup[name].rss - 1) * 100;
    const ratio = (figures: { a: Figures; b: Figures }) => (figures.a.rps / figures.b.rps).toFixed(2);
    console.log('');
    console.log(`gRPC alone: ListPets of 20 from the harness over the gateway's client, ${CONNECTIONS} in flight: ${grpc.rate.toFixed(0)} calls/s;`);
    console.log(`  CPU µs per call: client ${grpc.client.toFixed(0)}, pet service ${grpc.server.toFixed(0)}`);
    // Not a floor: costs measured in separate loops do not add up behind an HTTP server (the
    // response is asynchronous, and the call's streams, timers and garbage land in the same
    // process). `npm run bench:floor` measures the minimal app with the same call instead.
    console.log('');
    console.log(`read ratio       ${ratio(read)}  (target >= 0.5)${cluster === undefined ? '' : `; ${WORKERS} workers: ${ratio(cluster.read)}`}`);
    console.log(`write ratio      ${ratio(write)}  (target >= 0.4)${cluster === undefined ? '' : `; ${WORKERS} workers: ${ratio(cluster.write)}`}`);
    console.log(`rejection ratio  ${ratio(reject)}  (target >= 0.8; 429s per second / bare read per second, same rounds)`);
    console.log(`proxy ratio      ${ratio(proxy)}  (gateway to a bare upstream / that upstream alone, same rounds)`);
    console.log(`pet service calls during the rejection rounds: ${rejectedCalls} (must be 0)`);
    console.log(`peak RSS during reads: gateway ${peak.gateway.toFixed(0)} MB, pet service ${peak.petService.toFixed(0)} MB (target < 150 MB each)`);
    for (const name of ['gateway', 'petService'] as const) {
      console.log(
        `RSS ${name}: ${afterWarmup[name].rss.toFixed(1)} MB after warm-up, ${afterSoak[name].rss.toFixed(1)} MB after a ${SOAK_SECONDS} s soak: ${growth(name) >= 0 ? '+' : ''}${growth(name).toFixed(1)}% (target <= 10%)`,
      );
    }
  } finally {
    await Promise.all(processes.map((service) => service.stop()));
    await redis?.stop();
  }
}

/**
 * What each feature costs: the same app (bench/feature-gateway.ts, through tsx) with everything
 * on, and with one feature off at a time, in alternating rounds of reads and of writes. A feature's
 * cost is the gateway's CPU per request with it on minus with it off, medians over the rounds.
 */
async function featureCosts(petService: ServiceProcess, env: Record<string, string>, processes: ServiceProcess[]): Promise<void> {
  const variants: Array<{ name: string; service: ServiceProcess }> = [];
  for (const name of ['all on', ...FEATURES]) {
    const service = await startService('feature-gateway', { ...env, BENCH_WITHOUT: name === 'all on' ? '' : name });
    processes.push(service);
    stopCollectingLogs(service);
    variants.push({ name, service });
  }
  console.log('');
  console.log(`feature costs: bench/feature-gateway.ts (tsx), one feature off at a time, ${ROUNDS} alternating rounds of ${ROUND_SECONDS} s`);
  for (const [label, method, path, body, expect] of [
    ['read ', 'GET', READ_PATH, undefined, 200],
    ['write', 'POST', '/v1/pets', NEW_PET, 201],
  ] as const) {
    const targets = variants.map(({ service }): Target => ({
      url: `http://127.0.0.1:${service.port}${path}`,
      method,
      body,
      secret: SECRETS.bench,
      expect,
      processes: { gateway: () => [service.child.pid!] },
    }));
    for (const target of targets) await load(target, WARMUP_SECONDS);
    const runs: number[][] = targets.map(() => []);
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const [index, target] of targets.entries()) runs[index]!.push((await load(target, ROUND_SECONDS)).cpu.gateway!);
    }
    const all = median(runs[0]!);
    const costs = variants.slice(1).map(({ name }, index) => `${name} ${(all - median(runs[index + 1]!)).toFixed(0)}`);
    console.log(`${label} gateway CPU µs per request with all on: ${all.toFixed(0)}; cost of each: ${costs.join(', ')}`);
  }
}

/**
 * The gRPC hop on its own: ListPets pages of 20 from this process through the gateway's own
 * client code, as many in flight as the HTTP runs have connections, and what it costs per call
 * on each side when nothing else runs in the process.
 */
async function grpcAlone(petService: ServiceProcess): Promise<{ rate: number; client: number; server: number }> {
  const client = createPetClient({ target: `127.0.0.1:${petService.port}`, timeoutMs: 5000 });
  try {
    await listPetsFor(client, WARMUP_SECONDS, CONNECTIONS);
    const before = { client: process.cpuUsage(), server: cpuSeconds(petService.child.pid!) };
    const calls = (await listPetsFor(client, ROUND_SECONDS, CONNECTIONS)).length;
    const used = process.cpuUsage(before.client);
    return {
      rate: calls / ROUND_SECONDS,
      client: (used.user + used.system) / calls,
      server: ((cpuSeconds(petService.child.pid!) - before.server) * 1e6) / calls,
    };
  } finally {
    client.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
