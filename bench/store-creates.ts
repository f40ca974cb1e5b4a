/**
 * `npm run bench:store-creates`: creates per second through 1 and 2 pet-service processes on one
 * FerretDB, with its PostgreSQL handler (a private PostgreSQL from Debian's `postgresql` package)
 * or, with `BENCH_STORE_BACKEND=sqlite`, its SQLite handler. What limits them is the store's id
 * scheme and its writes, not the pet service's CPU.
 *
 * `BENCH_IN_FLIGHT` creates (default 16) are kept in flight, spread round-robin over the
 * processes, for `BENCH_ROUND_SECONDS` (default 10) after a warm-up; each process runs its build
 * with the store settings of a replica in production (`STORE_MAX_CONCURRENT_WRITES` and
 * `STORE_MAX_QUEUED_WRITES` at their defaults), and a refused or failed create counts as none.
 * `BENCH_BASELINE=<commit>` also builds that commit's pet service (into `.bench/`) and measures
 * it in alternating rounds with this checkout's, each round on a fresh database.
 */
import { randomUUID } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { credentials, Metadata, type ServiceError, status as Status } from '@grpc/grpc-js';
import { PetServiceClient, PetStatus } from '@petstore/proto';
import { startMongoOrSkip } from '../system-test/support/mongo-server';
import { startFerretDbOnPostgres } from '../system-test/support/postgres-server';
import { startService } from '../system-test/support/service-process';
import { buildBaseline } from './baseline-build';

const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 16);
const ROUND_SECONDS = Number(process.env.BENCH_ROUND_SECONDS ?? 10);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const BACKEND = process.env.BENCH_STORE_BACKEND ?? 'postgresql';
const BASELINE = process.env.BENCH_BASELINE;

interface Outcome {
  readonly created: number;
  readonly failed: Map<string, number>;
}

/** Keeps IN_FLIGHT creates going over `clients` for `seconds`. */
async function createFor(clients: readonly PetServiceClient[], seconds: number): Promise<Outcome> {
  const until = Date.now() + seconds * 1000;
  let created = 0;
  let next = 0;
  const failed = new Map<string, number>();
  const one = (client: PetServiceClient): Promise<void> =>
    new Promise((resolve) => {
      client.createPet(
        { name: 'bench', categoryId: '1', status: PetStatus.PET_STATUS_AVAILABLE },
        new Metadata(),
        { deadline: Date.now() + 2000 },
        (error: ServiceError | null) => {
          if (error === null) created += 1;
          else failed.set(Status[error.code]!, (failed.get(Status[error.code]!) ?? 0) + 1);
          resolve();
        },
      );
    });
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (Date.now() < until) await one(clients[next++ % clients.length]!);
    }),
  );
  return { created, failed };
}

async function measure(uri: string, script: string, processes: number): Promise<Outcome> {
  const env = { MONGODB_URI: uri, MONGODB_DB: `bench_${randomUUID().slice(0, 8)}` };
  const services = await Promise.all(Array.from({ length: processes }, () => startService('pet-service', env, { script })));
  // Their log lines go on flowing through the pipe, but are not kept.
  for (const service of services) service.child.stdout!.removeAllListeners('data');
  const clients = services.map((service) => new PetServiceClient(`127.0.0.1:${service.port}`, credentials.createInsecure()));
  try {
    await createFor(clients, WARMUP_SECONDS);
    return await createFor(clients, ROUND_SECONDS);
  } finally {
    for (const client of clients) client.close();
    await Promise.all(services.map((service) => service.stop()));
  }
}

async function main(): Promise<void> {
  const builds = [{ label: 'this checkout', script: 'pet-service/dist/main.js' }];
  if (BASELINE !== undefined) builds.unshift({ label: `baseline ${BASELINE}`, script: join(buildBaseline(BASELINE), 'pet-service', 'dist', 'main.js') });
  const server =
    BACKEND === 'sqlite'
      ? await startMongoOrSkip({ skip: () => { throw new Error('ferretdb was not found (run .ci/install-ferretdb.sh)'); } } as never)
      : await startFerretDbOnPostgres();
  const cpu = cpus();
  console.log(`cores: ${cpu.length} (${cpu[0]?.model ?? 'unknown'}), node ${process.version}, load average ${loadavg()[0]!.toFixed(1)}`);
  console.log(`CreatePet on FerretDB (${BACKEND} handler), ${IN_FLIGHT} in flight, ${ROUNDS} alternating rounds of ${ROUND_SECONDS} s`);
  const results = new Map<string, number[]>();
  try {
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const processes of [1, 2]) {
        for (const { label, script } of builds) {
          const { created, failed } = await measure(server.uri, script, processes);
          const key = `${label}, ${processes} process${processes === 1 ? '' : 'es'}`;
          results.set(key, [...(results.get(key) ?? []), created / ROUND_SECONDS]);
          const failures = [...failed].map(([reason, count]) => `${count} × ${reason}`).join(', ');
          console.log(`  ${key}: ${(created / ROUND_SECONDS).toFixed(1)} creates/s${failures === '' ? '' : `; failed: ${failures}`}`);
        }
      }
    }
  } finally {
    await server.close();
  }
  console.log('');
  for (const [key, rates] of results) console.log(`${key}: ${rates.map((rate) => rate.toFixed(1)).join(', ')} creates/s`);
  console.log(`load average at the end ${loadavg()[0]!.toFixed(1)}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
