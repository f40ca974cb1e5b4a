/**
 * `npm run bench:burst`: what a burst of reads does to pet services on FerretDB (issue 40). The
 * cluster suite's bursts send 90 lists at once through the gateways; on a busy node some of the
 * reads the pet services let through to the store outlived the store timeout (503 "pet service
 * unavailable") instead of being held or shed (503 "over capacity").
 *
 * `BENCH_BURST_REPLICAS` (3, as the production overlay) pet services (their builds, the image's defaults: `MONGODB_TIMEOUT_MS` 1000, reads 16 at
 * once and 16 queued) on one private FerretDB with its SQLite handler (or `MONGODB_URI`) holding
 * `BENCH_BURST_PETS` pets; each is first read one call at a time for a second (as the suite's
 * steady load and earlier tests read it), then sent `BENCH_BURST_SIZE` (90) ListPets of 1 at once
 * through the gateway's own client with the gateway's 2 s deadline. `BENCH_BASELINE=<commit>`
 * builds that commit's pet service too (bench/baseline-build.ts), on a database of its own, and
 * the two take turns, burst for burst, `BENCH_BURSTS` (5) each. `BENCH_BUSY=<n>` runs n busy loops
 * throughout, a slower machine. Prints, per build, what the calls ended with (OK, shed, store
 * timeout, deadline) and the latency of those served.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { status as Status } from '@grpc/grpc-js';
import { MongoClient } from 'mongodb';
import { PetStatus } from '@petstore/proto';
import { createPetClient, type PetClient } from '../gateway/src/pet-service-client/pet-client';
import { startMongoOrSkip } from '../system-test/support/mongo-server';
import { type ServiceProcess, startService } from '../system-test/support/service-process';
import { buildBaseline } from './baseline-build';
import { PET_SERVICE_NODE_FLAGS, stopCollectingLogs } from './list-pets-load';
import { quantile } from './open-loop';

const BURST_SIZE = Number(process.env.BENCH_BURST_SIZE ?? 90);
const BURSTS = Number(process.env.BENCH_BURSTS ?? 5);
const PETS = Number(process.env.BENCH_BURST_PETS ?? 2000);
const BUSY = Number(process.env.BENCH_BUSY ?? 0);
/** Pet services per build: production's overlay runs three on one store. */
const REPLICAS = Number(process.env.BENCH_BURST_REPLICAS ?? 3);
const BASELINE = process.env.BENCH_BASELINE;
/** The gateway's deadline (PET_SERVICE_TIMEOUT_MS's default). */
const DEADLINE_MS = 2000;
const STATUSES = ['available', 'pending', 'sold'] as const;

interface Side {
  readonly label: string;
  readonly services: ServiceProcess[];
  readonly client: PetClient;
  readonly outcomes: Map<string, number>;
  readonly servedMs: number[];
  readonly perBurst: string[];
}

/** What a call ended with: OK, or its code and, for the two kinds of UNAVAILABLE-like refusals, why. */
function outcomeOf(error: unknown): string {
  const { code, details } = error as { code?: number; details?: string };
  if (code === Status.RESOURCE_EXHAUSTED) return 'shed (RESOURCE_EXHAUSTED)';
  if (code === Status.UNAVAILABLE) return `UNAVAILABLE: ${details ?? ''}`;
  return code === undefined ? String(error) : Status[code]!;
}

async function warm(client: PetClient, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) await client.listPets({ pageSize: 1, pageToken: '', status: PetStatus.PET_STATUS_UNSPECIFIED }).catch(() => undefined);
}

async function burst(side: Side): Promise<void> {
  await warm(side.client, 1000);
  const counts = new Map<string, number>();
  await Promise.all(
    Array.from({ length: BURST_SIZE }, async () => {
      const started = performance.now();
      let outcome = 'OK';
      try {
        await side.client.listPets({ pageSize: 1, pageToken: '', status: PetStatus.PET_STATUS_UNSPECIFIED });
        side.servedMs.push(performance.now() - started);
      } catch (error) {
        outcome = outcomeOf(error);
      }
      counts.set(outcome, (counts.get(outcome) ?? 0) + 1);
      side.outcomes.set(outcome, (side.outcomes.get(outcome) ?? 0) + 1);
    }),
  );
  side.perBurst.push([...counts].map(([outcome, count]) => `${outcome} ${count}`).join(', '));
}

async function main(): Promise<void> {
  const cpu = cpus();
  console.log(`cores: ${cpu.length} (${cpu[0]?.model ?? 'unknown'}), node ${process.version}, load average ${loadavg()[0]!.toFixed(1)}, ${BUSY} busy loop(s)`);
  const mongo = await startMongoOrSkip({ skip: () => { throw new Error('no MongoDB-wire server: set MONGODB_URI or install FerretDB (.ci/install-ferretdb.sh)'); } } as never);
  const raw = new MongoClient(mongo.uri, { useBigInt64: true });
  const builds = [{ label: 'this checkout', script: 'pet-service/dist/main.js' }];
  if (BASELINE !== undefined) builds.push({ label: `baseline ${BASELINE}`, script: join(buildBaseline(BASELINE), 'pet-service', 'dist', 'main.js') });
  const sides: Side[] = [];
  const busy: ChildProcess[] = [];
  try {
    for (const { label, script } of builds) {
      const database = mongo.freshDatabase();
      const pets = raw.db(database).collection<{ _id: bigint; name: string; categoryId: bigint; status: string }>('pets');
      for (let from = 1; from <= PETS; from += 1000) {
        const count = Math.min(1000, PETS - from + 1);
        await pets.insertMany(Array.from({ length: count }, (_, index) => ({ _id: BigInt(from + index), name: `pet-${from + index}`, categoryId: 1n, status: STATUSES[(from + index) % 3]! })));
      }
      const env = { LOG_LEVEL: 'info', MONGODB_URI: mongo.uri, MONGODB_DB: database };
      const services = await Promise.all(Array.from({ length: REPLICAS }, () => startService('pet-service', env, { script, nodeFlags: PET_SERVICE_NODE_FLAGS })));
      for (const service of services) stopCollectingLogs(service);
      const client = createPetClient({ target: `ipv4:${services.map(({ port }) => `127.0.0.1:${port}`).join(',')}`, timeoutMs: DEADLINE_MS });
      sides.push({ label, services, client, outcomes: new Map(), servedMs: [], perBurst: [] });
    }
    for (let index = 0; index < BUSY; index += 1) busy.push(spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
    console.log(`${BURSTS} bursts of ${BURST_SIZE} ListPets (page of 1) per build, taking turns; ${REPLICAS} pet services each on ${mongo.kind === 'ferretdb' ? 'FerretDB (SQLite handler)' : 'MONGODB_URI'}, ${PETS} pets`);
    for (let round = 0; round < BURSTS; round += 1) for (const side of sides) await burst(side);
    for (const side of sides) {
      const served = side.servedMs;
      console.log(`${side.label}:`);
      console.log(`  in all: ${[...side.outcomes].map(([outcome, count]) => `${outcome} ${count}`).join(', ')}`);
      console.log(`  served p50 ${quantile(served, 0.5).toFixed(0)} ms, p99 ${quantile(served, 0.99).toFixed(0)} ms, max ${Math.max(...served).toFixed(0)} ms`);
      for (const [index, line] of side.perBurst.entries()) console.log(`  burst ${index + 1}: ${line}`);
    }
    console.log(`load average at the end ${loadavg()[0]!.toFixed(1)}`);
  } finally {
    for (const child of busy) child.kill();
    for (const side of sides) side.client.close();
    await Promise.all(sides.flatMap((side) => side.services.map((service) => service.stop())));
    await raw.close();
    await mongo.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
