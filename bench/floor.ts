/**
 * `npm run bench:floor`: what sets the floor of a proxied read, measured behind HTTP side by side
 * (issue 23) rather than added up from separate loops. One pet service (its build, in-memory store,
 * 1,000 pets) and, each in its own process, apps that answer `GET /v1/pets?limit=20` with the body
 * the gateway writes:
 *
 *   a  node:http, the body precomputed: no gRPC
 *   b  node:http + `createPetServiceClient` (its own transport on node:http2, every default on), `petsToJson`
 *   c  express 5 + the same call
 *   d  node:http + @connectrpc/connect-node's gRPC transport (bench/gen-es)
 *   e  node:http + a unary call written directly on node:http2
 *   f  the gateway itself (gateway/dist/main.js, a key without limits)
 *   g  the gateway exporting traces, 10% of new traces sampled (parentbased_traceidratio 0.1), to
 *      an OTLP sink in this process that answers every export 200
 *   h  the gateway exporting every trace (parentbased_always_on) to the same sink
 *   i  the gateway built from BENCH_BASELINE=<commit> (bench/baseline-build.ts): say, the last one
 *      before a change, to measure that change side by side
 *   j  a second process of f: two identical gateways, whose difference is the run's noise
 *   k  bench/feature-gateway.ts with everything on (the gateway's app from source, through tsx)
 *   l  the same without tracing (BENCH_WITHOUT=tracing): k − l is what propagation always costs
 *   m  node:http + grpc-js's own `Channel` (`createCall`) with the channel options the client gave
 *      grpc-js before, no generated Client, no retries, ts-proto decode: the grpc-js floor
 *   u  node:http + undici's HTTP/2 client (h2c, one connection), the gRPC framing and status read
 *      in a dispatch handler: undici as the carrier, beside e's bare node:http2
 *   p  the peer: grpc-gateway v2 (Go) from ../shared/peer-bench, its binary at BENCH_PEER_BIN
 *      (built by that benchmark's peer-grpc-gateway/build.sh); it checks the key's SHA-256 and
 *      nothing else, and answers grpc-gateway's own body (`{"pets":[…],"nextPageToken":…}`), checked
 *      for the same 20 ids in order. Beside it, the floors' and the gateway's CPU per read as
 *      multiples of the peer's, in the same rounds
 *
 * The variants (bench/floor/) are bundled by esbuild as `npm run build` bundles the services, and
 * every Node app runs on the same Node with the gateway image's flags, source maps included. autocannon
 * (in this process) loads them in alternating rounds (a b c d e f a b ...) after a warm-up of each,
 * 16 connections, pipelining 1. Every figure is a median over the rounds; a difference between two
 * variants is the median of its per-round differences, each round's pair measured back to back.
 *
 * Beside CPU, each Node app's heap allocation per request: bytes V8 allocated during the round (garbage
 * included), read from outside the app's code by bench/floor/allocation-probe.ts. It falls as V8
 * optimises the apps' code: compare bytes after a warm-up of 20 s or more (BENCH_WARMUP_SECONDS).
 * And each app's peak RSS (VmHWM) over the whole run, read when the rounds are over, with its RSS
 * then split into anonymous memory and mapped files (mostly the code pages of Node's own binary).
 *
 * BENCH_ROUNDS, BENCH_ROUND_SECONDS, BENCH_WARMUP_SECONDS and BENCH_CONNECTIONS as in the other
 * benchmarks; `BENCH_FLOOR_VARIANTS=a,b,f` runs a subset; BENCH_CPU_PROF=<dir> as in `npm run bench`.
 * `BENCH_MAX_CONNECTION_AGE_MS` sets the pet service's GRPC_MAX_CONNECTION_AGE_MS: with 2000 and one
 * round of 30 s, every variant's connections are recycled every 2 s under load, and any read that
 * fails (anything but a 200) fails the run.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import { createPetServiceClient } from '@petstore/proto';
import { sha256Hex } from '../gateway/src/keys/api-keys';
import { petsToJson } from '../gateway/src/http/pet-json';
import { bundleFloorApps, FLOOR_OUT_DIR } from './floor/bundle';
import { READ_PATH, LIST_20 } from './floor/variant-server';
import { buildBaseline } from './baseline-build';
import { cpuSeconds, median, memoryMb, PET_SERVICE_NODE_FLAGS, profileFlags, seed } from './list-pets-load';
import { startService, type ServiceProcess } from '../system-test/support/service-process';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const ROUND_SECONDS = Number(process.env.BENCH_ROUND_SECONDS ?? 5);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const SEED_PETS = 1_000;
const SECRET = 'bench-floor-unlimited-secret';
/** Where the variants' bundles go (ignored by git, as baseline builds are). */
const OUT_DIR = FLOOR_OUT_DIR;
/** bench/floor/allocation-probe.ts's bundle, and the key of the lines it writes. */
const ALLOCATION_PROBE = { entry: 'allocation-probe', key: 'benchAllocatedBytes' } as const;
/**
 * The gateway image's Node flags (gateway/Dockerfile), for every app, and the allocation probe;
 * startService adds `--enable-source-maps`.
 */
const APP_NODE_FLAGS = [
  '--max-semi-space-size=4',
  '--max-old-space-size=64',
  '--require',
  join(__dirname, '..', OUT_DIR, `${ALLOCATION_PROBE.entry}.js`),
  ...profileFlags(),
];
/** Node flags variant j adds to f's (BENCH_J_NODE_FLAGS, space-separated): a flag measured against f in the same run. */
const J_EXTRA_NODE_FLAGS = (process.env.BENCH_J_NODE_FLAGS ?? '').split(' ').filter(Boolean);

const VARIANTS = {
  a: { label: 'a node:http, precomputed body', entry: 'a-bare-http' },
  b: { label: 'b node:http + createPetServiceClient', entry: 'b-pet-service-client-http' },
  c: { label: 'c express 5 + createPetServiceClient', entry: 'c-pet-service-client-express' },
  d: { label: 'd node:http + connect-node', entry: 'd-connect-http' },
  e: { label: 'e node:http + raw node:http2', entry: 'e-raw-http2' },
  f: { label: 'f the gateway (dist)', entry: undefined },
  g: { label: 'g the gateway, traces 10% exported', entry: undefined },
  h: { label: 'h the gateway, traces all exported', entry: undefined },
  i: { label: `i the gateway at ${process.env.BENCH_BASELINE ?? 'BENCH_BASELINE'}`, entry: undefined },
  j: { label: 'j the gateway (dist), again', entry: undefined },
  k: { label: 'k feature gateway, all on', entry: undefined },
  l: { label: 'l feature gateway, no tracing', entry: undefined },
  m: { label: 'm node:http + grpc-js Channel', entry: 'm-grpc-js-channel' },
  p: { label: 'p grpc-gateway (Go), the peer', entry: undefined },
  u: { label: 'u node:http + undici h2c', entry: 'u-undici-h2c' },
} as const;
/** Variant p's executable: the peer benchmark's grpc-gateway build. */
const PEER_BIN = process.env.BENCH_PEER_BIN === undefined ? undefined : resolve(process.env.BENCH_PEER_BIN);

/** The gateway variants' tracing settings, beside the OTLP sink's endpoint. */
const TRACING: Partial<Record<VariantName, Record<string, string>>> = {
  g: { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' },
  h: { OTEL_TRACES_SAMPLER: 'parentbased_always_on' },
};
type VariantName = keyof typeof VARIANTS;

/** The comparisons the issue asks about, each printed when both of its variants ran. */
const DIFFERENCES: ReadonlyArray<readonly [VariantName, VariantName, string]> = [
  ['b', 'a', 'the client behind node:http (b − a)'],
  ['c', 'b', 'express on an asynchronous response (c − b)'],
  ['d', 'b', 'connect-node instead of the client (d − b)'],
  ['b', 'e', 'the client, every promise on, over bare node:http2 (b − e)'],
  ['u', 'e', 'undici over bare node:http2 (u − e)'],
  ['b', 'u', 'the client over undici (b − u)'],
  ['b', 'm', 'the client against the grpc-js Channel (b − m)'],
  ['f', 'm', "the gateway's own share over the Channel floor (f − m)"],
  ['f', 'b', "the gateway's own share (f − b)"],
  ['f', 'c', 'the gateway against minimal express (f − c)'],
  ['f', 'i', 'this gateway against the baseline build (f − i)'],
  ['j', 'f', 'two processes of the same gateway: the noise (j − f)'],
  ['k', 'l', 'trace context with export off, in one build (k − l)'],
  ['g', 'f', 'exporting 10% of traces (g − f)'],
  ['h', 'f', 'exporting every trace (h − f)'],
  ['f', 'p', 'the gateway over the peer (f − p)'],
  ['m', 'p', 'the grpc-js Channel floor over the peer (m − p)'],
];

/** The peer's multiples (issue 41's targets are CPU per read as a multiple of the peer's), printed when p ran. */
const PEER_RATIOS: readonly VariantName[] = ['f', 'b', 'm', 'e', 'u'];

interface Round {
  rps: number;
  p50: number;
  p99: number;
  /** CPU µs per request of the variant's process, the pet service and the load generator. */
  app: number;
  petService: number;
  loadGenerator: number;
  /** Bytes the variant's process allocated on its heap per request; NaN for the peer (not Node). */
  allocated: number;
}

interface Running {
  readonly name: VariantName;
  readonly service: ServiceProcess;
  readonly url: string;
  readonly headers: Record<string, string>;
  /** Bytes the process has allocated on its heap so far. */
  readonly allocatedBytes: () => Promise<number>;
  readonly rounds: Round[];
}

function selectedVariants(): VariantName[] {
  const names = (process.env.BENCH_FLOOR_VARIANTS ?? Object.keys(VARIANTS).join(','))
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  for (const name of names) {
    if (!(name in VARIANTS)) throw new Error(`BENCH_FLOOR_VARIANTS: unknown variant ${name}; choose among ${Object.keys(VARIANTS).join(',')}`);
  }
  return [...new Set(names)] as VariantName[];
}

/** Bundles the selected variants' entries and the allocation probe as `npm run build` bundles the services. */
async function buildVariants(names: VariantName[]): Promise<void> {
  await bundleFloorApps([ALLOCATION_PROBE.entry, ...names.map((name) => VARIANTS[name].entry).filter((entry) => entry !== undefined)]);
}

/** Asks an app's allocation probe (SIGUSR2) for the bytes it has allocated so far, and waits for its answer on stderr. */
function allocationReader(child: ChildProcess): () => Promise<number> {
  const waiting: Array<(bytes: number) => void> = [];
  createInterface({ input: child.stderr! }).on('line', (text) => {
    if (!text.includes(ALLOCATION_PROBE.key)) return;
    waiting.shift()?.((JSON.parse(text) as Record<string, number>)[ALLOCATION_PROBE.key]!);
  });
  return () =>
    new Promise((resolve) => {
      waiting.push(resolve);
      child.kill('SIGUSR2');
    });
}

/** The list body as the gateway writes it, from the pet service itself: variant a's answer. */
async function listBody(petServiceAddr: string): Promise<string> {
  const client = createPetServiceClient(petServiceAddr);
  try {
    return petsToJson((await client.listPets(LIST_20)).pets);
  } finally {
    client.close();
  }
}

async function load(variant: Running, petServicePid: number, seconds: number): Promise<Round> {
  const allocatedBefore = await variant.allocatedBytes();
  const before = { app: cpuSeconds(variant.service.child.pid!), petService: cpuSeconds(petServicePid), own: process.cpuUsage() };
  const result = await autocannon({ url: variant.url, connections: CONNECTIONS, pipelining: 1, duration: seconds, headers: variant.headers });
  const own = process.cpuUsage(before.own);
  const after = { app: cpuSeconds(variant.service.child.pid!), petService: cpuSeconds(petServicePid) };
  const allocated = (await variant.allocatedBytes()) - allocatedBefore;
  const ok = result.statusCodeStats?.['200']?.count ?? 0;
  if (result.errors > 0 || result.requests.total === 0 || ok !== result.requests.total) {
    throw new Error(`${VARIANTS[variant.name].label}: ${result.errors} errors, ${ok}/${result.requests.total} were 200`);
  }
  const perRequest = (cpu: number) => (cpu * 1e6) / result.requests.total;
  return {
    rps: result.requests.total / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    app: perRequest(after.app - before.app),
    petService: perRequest(after.petService - before.petService),
    loadGenerator: (own.user + own.system) / result.requests.total,
    allocated: allocated / result.requests.total,
  };
}

/** Peak RSS, then RSS now as anonymous memory plus mapped files (the executable's code pages, shared with every process that runs it). */
function rss(pid: number): string {
  const { peak, anon, file } = memoryMb(pid);
  return `${peak.toFixed(0).padStart(13)}${`${anon.toFixed(0)}+${file.toFixed(0)}`.padStart(15)}`;
}

function report(running: Running[]): void {
  const byName = new Map(running.map((variant) => [variant.name, variant]));
  const pad = Math.max(...running.map((variant) => VARIANTS[variant.name].label.length));
  console.log('');
  console.log(`${'variant'.padEnd(pad)}   req/s  p50 ms  p99 ms  CPU µs/req: app  pet service  load gen  app B/req  peak RSS MB  anon+file now   (app µs, KB per round)`);
  for (const variant of running) {
    const of = (key: keyof Round) => median(variant.rounds.map((round) => round[key]));
    // No allocation figure for an app that is not Node (the peer).
    const allocatedMedian = of('allocated');
    const allocated = Number.isNaN(allocatedMedian) ? undefined : allocatedMedian;
    console.log(
      `${VARIANTS[variant.name].label.padEnd(pad)} ${of('rps').toFixed(0).padStart(7)} ${of('p50').toFixed(0).padStart(7)} ${of('p99').toFixed(0).padStart(7)}` +
        `${of('app').toFixed(0).padStart(17)} ${of('petService').toFixed(0).padStart(12)} ${of('loadGenerator').toFixed(0).padStart(9)}` +
        `${(allocated?.toFixed(0) ?? '-').padStart(11)}${rss(variant.service.child.pid!)}` +
        `   (${variant.rounds.map((round) => round.app.toFixed(0)).join(' ')}` +
        `${allocated === undefined ? '' : `; KB ${variant.rounds.map((round) => (round.allocated / 1000).toFixed(1)).join(' ')}`})`,
    );
  }
  const lines = DIFFERENCES.filter(([x, y]) => byName.has(x) && byName.has(y));
  if (lines.length === 0) return;
  console.log('');
  console.log("differences in the app's CPU µs and heap bytes allocated per request, median of the per-round differences (range):");
  for (const [x, y, label] of lines) {
    const differences = (key: 'app' | 'allocated') => byName.get(x)!.rounds.map((round, index) => round[key] - byName.get(y)!.rounds[index]![key]);
    const diffs = differences('app');
    const bytes = differences('allocated');
    const share = x === 'f' && y !== 'i' && y !== 'p' ? `, ${((median(diffs) / median(byName.get('f')!.rounds.map((round) => round.app))) * 100).toFixed(0)}% of the gateway's CPU` : '';
    const allocation = Number.isNaN(median(bytes)) ? '' : `; ${median(bytes).toFixed(0)} B (${Math.min(...bytes).toFixed(0)} to ${Math.max(...bytes).toFixed(0)})`;
    console.log(`  ${label}: ${median(diffs).toFixed(0)} µs (${Math.min(...diffs).toFixed(0)} to ${Math.max(...diffs).toFixed(0)})${share}${allocation}`);
  }
  const peer = byName.get('p');
  const ratios = PEER_RATIOS.filter((name) => peer !== undefined && byName.has(name));
  if (ratios.length === 0) return;
  console.log('');
  console.log("the app's CPU per read as a multiple of the peer's, median of the per-round ratios (range):");
  for (const name of ratios) {
    const multiples = byName.get(name)!.rounds.map((round, index) => round.app / peer!.rounds[index]!.app);
    console.log(`  ${VARIANTS[name].label}: ${median(multiples).toFixed(2)}× (${Math.min(...multiples).toFixed(2)} to ${Math.max(...multiples).toFixed(2)})`);
  }
}

/** True when grpc-gateway's body (`{"pets":[…]}`, ids as strings) holds the pets of the gateway's body, in order. */
function samePets(peerBody: string, gatewayBody: string): boolean {
  const ids = (pets: ReadonlyArray<{ id: string | number }>) => pets.map((pet) => String(pet.id)).join(',');
  const gatewayPets = JSON.parse(gatewayBody) as Array<{ id: number }>;
  let peerPets: unknown;
  try {
    peerPets = (JSON.parse(peerBody) as { pets?: unknown }).pets;
  } catch {
    return false;
  }
  return Array.isArray(peerPets) && gatewayPets.length > 0 && ids(peerPets as Array<{ id: string }>) === ids(gatewayPets);
}

/** An OTLP/HTTP endpoint that reads every export and answers 200, as a collector would. */
async function startOtlpSink(): Promise<{ endpoint: string; close(): void }> {
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

async function main(): Promise<void> {
  const names = selectedVariants();
  if (names.includes('i') && process.env.BENCH_BASELINE === undefined) throw new Error('variant i needs BENCH_BASELINE=<commit>');
  if (names.includes('p') && PEER_BIN === undefined) throw new Error('variant p needs BENCH_PEER_BIN=<path of ../shared/peer-bench/peer-grpc-gateway/peer-grpc-gateway>');
  const baselineScript = names.includes('i') ? join(buildBaseline(process.env.BENCH_BASELINE!), 'gateway', 'dist', 'main.js') : undefined;
  const sink = await startOtlpSink();
  const cpu = cpus();
  console.log(`cores: ${cpu.length} (${cpu[0]?.model ?? 'unknown'}), node ${process.version}, ${new Date().toISOString()}, load average ${loadavg()[0]!.toFixed(1)}`);
  console.log(`GET ${READ_PATH}, ${CONNECTIONS} connections, pipelining 1, ${ROUNDS} alternating rounds of ${ROUND_SECONDS} s after ${WARMUP_SECONDS} s warm-up of each`);
  console.log(`apps: node ${APP_NODE_FLAGS.join(' ')} --enable-source-maps; pet service: node ${PET_SERVICE_NODE_FLAGS.join(' ')}, in-memory store, ${SEED_PETS} pets`);
  await buildVariants(names);

  const dir = mkdtempSync(join(tmpdir(), 'bench-floor-'));
  const processes: ServiceProcess[] = [];
  try {
    const maxAge = process.env.BENCH_MAX_CONNECTION_AGE_MS === undefined ? {} : { GRPC_MAX_CONNECTION_AGE_MS: process.env.BENCH_MAX_CONNECTION_AGE_MS };
    const petService = await startService('pet-service', { LOG_LEVEL: 'info', MONGODB_URI: '', ...maxAge }, { compiled: true, nodeFlags: [...PET_SERVICE_NODE_FLAGS, ...profileFlags()] });
    processes.push(petService);
    const petServiceAddr = `127.0.0.1:${petService.port}`;
    await seed(petService.port, SEED_PETS);
    const body = await listBody(petServiceAddr);
    writeFileSync(join(dir, 'list.json'), body);
    const keysFile = join(dir, 'keys.json');
    writeFileSync(keysFile, JSON.stringify({ keys: [{ id: 'bench', sha256: sha256Hex(SECRET), plan: 'enterprise', limits: { perMinute: 1e9, perDay: 1e9 } }] }));

    const running: Running[] = [];
    for (const name of names) {
      const { entry } = VARIANTS[name];
      const tracing = TRACING[name] === undefined ? {} : { ...TRACING[name], OTEL_EXPORTER_OTLP_ENDPOINT: sink.endpoint };
      const gatewayEnv = { PET_SERVICE_ADDR: petServiceAddr, API_KEYS_FILE: keysFile, REDIS_URL: '', BAN_THRESHOLD: '1000000000', LOG_LEVEL: 'info' };
      const service =
        name === 'p'
          ? await startService('peer', {}, { command: [PEER_BIN!, '-listen', '127.0.0.1:0', '-backend', petServiceAddr, '-keys', keysFile] })
          : name === 'k' || name === 'l'
          ? await startService('feature-gateway', { ...gatewayEnv, BENCH_WITHOUT: name === 'l' ? 'tracing' : '' }, { nodeFlags: APP_NODE_FLAGS })
          : entry === undefined
          ? await startService(
              'gateway',
              { PET_SERVICE_ADDR: petServiceAddr, API_KEYS_FILE: keysFile, REDIS_URL: '', BAN_THRESHOLD: '1000000000', LOG_LEVEL: 'info', ...tracing },
              name === 'i'
                ? { script: baselineScript!, nodeFlags: APP_NODE_FLAGS }
                : { compiled: true, nodeFlags: name === 'j' ? [...APP_NODE_FLAGS, ...J_EXTRA_NODE_FLAGS] : APP_NODE_FLAGS },
            )
          : await startService(`floor ${name}`, { PET_SERVICE_ADDR: petServiceAddr, FLOOR_LIST_BODY_FILE: join(dir, 'list.json') }, { script: join(OUT_DIR, `${entry}.js`), nodeFlags: APP_NODE_FLAGS });
      processes.push(service);
      const headers: Record<string, string> = entry === undefined ? { authorization: `Bearer ${SECRET}` } : {};
      const allocatedBytes = name === 'p' ? () => Promise.resolve(NaN) : allocationReader(service.child);
      running.push({ name, service, url: `http://127.0.0.1:${service.port}${READ_PATH}`, headers, allocatedBytes, rounds: [] });
    }
    // Every variant must answer what the gateway answers, byte for byte; the peer, the same pets.
    for (const variant of running) {
      const response = await fetch(variant.url, { headers: variant.headers });
      const text = await response.text();
      const same = response.status === 200 && (variant.name === 'p' ? samePets(text, body) : text === body);
      if (!same) throw new Error(`${VARIANTS[variant.name].label}: answered ${response.status} ${text.slice(0, 200)}`);
    }
    // The gateway logs a line per request; the harness keeps none, and the pipes keep flowing.
    for (const service of processes) service.child.stdout!.removeAllListeners('data');

    for (const variant of running) await load(variant, petService.child.pid!, WARMUP_SECONDS);
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const variant of running) variant.rounds.push(await load(variant, petService.child.pid!, ROUND_SECONDS));
    }
    report(running);
    console.log('');
    console.log(`load average at the end ${loadavg()[0]!.toFixed(1)}`);
  } finally {
    await Promise.all(processes.map((service) => service.stop()));
    sink.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
