/**
 * `npm run bench:pet-service`: the pet service's CPU per ListPets of 20, the figure issue 16 sets
 * a target for, without the gateway in front. The harness (this process) calls the service's build
 * through the gateway's own client, 16 calls in flight, and charges the service the user plus
 * system CPU that /proc gives for its process.
 *
 * `BENCH_BASELINE=<commit>` also builds that commit's pet service (into `.bench/`) and loads the
 * two in alternating rounds (A B A B ...), so that a change is measured against its baseline under
 * the same machine load; CPU per call depends much less on that load than calls per second do.
 * `BENCH_BASELINE_VARIANT` gives the baseline's settings and flags, as a variant below (its image's
 * heap flags, say, where they differ from this checkout's). `BENCH_BASELINE_NODE=<path>` runs the
 * baseline on another Node binary (the Node 20 that an older main ran on, say).
 * `BENCH_PET_FLOOR=1` adds the floor: grpc-js's server answering with a page built once
 * (bench/floor/pet-service-minimal.ts), what any pet service on grpc-js pays per call.
 * `BENCH_VARIANTS='|LOG_SLOW_CALL_MS=0'` runs this checkout's build once per variant, each a
 * space-separated list of environment settings and Node flags (`--max-semi-space-size=16`, after
 * the benchmark's own), variants separated by `|` (this one: what logging every call costs). The
 * services log at `info`, the production default.
 */
import { execFileSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { bundleFloorApps, FLOOR_OUT_DIR } from './floor/bundle';
import { createPetClient, type PetClient } from '../gateway/src/pet-service-client/pet-client';
import { startService, type ServiceProcess } from '../system-test/support/service-process';
import { buildBaseline } from './baseline-build';
import { cpuTimes, listPetsFor, median, memoryMb, PET_SERVICE_NODE_FLAGS, profileFlags, seed } from './list-pets-load';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const ROUND_SECONDS = Number(process.env.BENCH_ROUND_SECONDS ?? 4);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const IN_FLIGHT = Number(process.env.BENCH_CONNECTIONS ?? 16);
const SEED_PETS = 10_000;
const VARIANTS = (process.env.BENCH_VARIANTS ?? '').split('|').map((variant) => variant.trim());
const BASELINE = process.env.BENCH_BASELINE;
const BASELINE_NODE = process.env.BENCH_BASELINE_NODE;
const FLOOR = process.env.BENCH_PET_FLOOR === '1';
const FLOOR_SCRIPT = join(FLOOR_OUT_DIR, 'pet-service-minimal.js');

interface Side {
  readonly label: string;
  readonly service: ServiceProcess;
  readonly client: PetClient;
  readonly cpu: number[];
  /** The system (kernel) part of `cpu`: socket and pipe writes, thread wake-ups. */
  readonly system: number[];
  readonly p50: number[];
  readonly p99: number[];
}

const quantile = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

async function round(side: Side, seconds: number, record: boolean): Promise<void> {
  const before = cpuTimes(side.service.child.pid!);
  const latencies = await listPetsFor(side.client, seconds, IN_FLIGHT);
  const after = cpuTimes(side.service.child.pid!);
  if (!record) return;
  latencies.sort((a, b) => a - b);
  const perCall = (seconds: number) => (seconds * 1e6) / latencies.length;
  side.cpu.push(perCall(after.user + after.system - before.user - before.system));
  side.system.push(perCall(after.system - before.system));
  side.p50.push(quantile(latencies, 0.5));
  side.p99.push(quantile(latencies, 0.99));
}

async function main(): Promise<void> {
  const builds: Array<{ label: string; variant: string; script: string; node?: string }> = VARIANTS.map((variant) => ({
    label: `this checkout${variant === '' ? '' : `, ${variant}`}`,
    variant,
    script: 'pet-service/dist/main.js',
  }));
  if (BASELINE !== undefined) {
    const variant = process.env.BENCH_BASELINE_VARIANT ?? '';
    const node = BASELINE_NODE === undefined ? '' : `, on ${execFileSync(BASELINE_NODE, ['--version']).toString().trim()}`;
    builds.push({
      label: `baseline ${BASELINE}${variant === '' ? '' : `, ${variant}`}${node}`,
      variant,
      script: join(buildBaseline(BASELINE), 'pet-service', 'dist', 'main.js'),
      node: BASELINE_NODE,
    });
  }
  if (FLOOR) {
    await bundleFloorApps(['pet-service-minimal']);
    builds.push({ label: 'floor: grpc-js server, page built once', variant: '', script: FLOOR_SCRIPT });
  }
  const cpu = cpus();
  console.log(`cores: ${cpu.length} (${cpu[0]?.model ?? 'unknown'}), node ${process.version}, load average ${loadavg()[0]!.toFixed(1)}`);
  console.log(`ListPets of 20 over gRPC, ${IN_FLIGHT} in flight, ${SEED_PETS} pets in memory`);
  console.log(`${ROUNDS} alternating rounds of ${ROUND_SECONDS} s after ${WARMUP_SECONDS} s warm-up; node ${PET_SERVICE_NODE_FLAGS.join(' ')}`);
  const sides: Side[] = [];
  try {
    for (const { label, variant, script, node } of builds) {
      const words = variant.split(' ').filter((word) => word !== '');
      const flags = words.filter((word) => word.startsWith('--'));
      const settings = Object.fromEntries(words.filter((word) => !word.startsWith('--')).map((setting) => setting.split('=', 2)));
      const nodeFlags = [...PET_SERVICE_NODE_FLAGS, ...flags, ...profileFlags()];
      const service = await startService('pet-service', { LOG_LEVEL: 'info', MONGODB_URI: '', ...settings }, { script, nodeFlags, node });
      // Its log lines go on flowing through the pipe, but are not kept.
      service.child.stdout!.removeAllListeners('data');
      sides.push({ label: `${label} (${script})`, service, client: createPetClient({ target: `127.0.0.1:${service.port}`, timeoutMs: 5000 }), cpu: [], system: [], p50: [], p99: [] });
      await seed(service.port, SEED_PETS);
    }
    for (const side of sides) await round(side, WARMUP_SECONDS, false);
    for (let index = 0; index < ROUNDS; index += 1) for (const side of sides) await round(side, ROUND_SECONDS, true);
    for (const side of sides) {
      const rounds = side.cpu.map((micros) => micros.toFixed(0)).join(' ');
      console.log(`${side.label}:`);
      console.log(`  pet service CPU µs per call ${median(side.cpu).toFixed(0)} (rounds: ${rounds}), of which system ${median(side.system).toFixed(0)}`);
      console.log(`  client latency p50 ${median(side.p50).toFixed(1)} ms, p99 ${median(side.p99).toFixed(1)} ms; peak RSS ${memoryMb(side.service.child.pid!).peak.toFixed(0)} MB`);
    }
    console.log(`load average at the end ${loadavg()[0]!.toFixed(1)}`);
  } finally {
    for (const side of sides) side.client.close();
    await Promise.all(sides.map((side) => side.service.stop()));
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
