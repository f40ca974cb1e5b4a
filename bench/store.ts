/**
 * `npm run bench:store`: does a deep page cost what the first page costs? Loads 1,000 and then
 * 1,000,000 pets into each store and times `ListPets` pages of 20 over real gRPC (a pet service on
 * port 0 in this process) at the start, middle and end of the collection, with and without a
 * status filter. The figure is `deep-page p50 at 1M / first-page p50 at 1k`, per store.
 *
 * The MongoDB store runs against MONGODB_URI when set, else a private FerretDB (as the tests do).
 */
import { credentials, Metadata } from '@grpc/grpc-js';
import { type ListPetsRequest, type ListPetsResponse, PetServiceClient, PetStatus } from '@petstore/proto';
import { MongoClient } from 'mongodb';
import { startMongoOrSkip, type MongoServer } from '../system-test/support/mongo-server';
import { MemoryPetRepository } from '../pet-service/src/store/memory-pet-repository';
import { MongoPetRepository } from '../pet-service/src/store/mongo-pet-repository';
import { PageTokenCodec } from '../pet-service/src/pets/page-token';
import type { StoredStatus } from '../pet-service/src/pets/pet-record';
import type { PetRepository } from '../pet-service/src/store/pet-repository';
import { createServer } from '../pet-service/src/server';

const sizes = (value: string | undefined) => (value ?? '1000,1000000').split(',').map(Number);
const SIZES = { memory: sizes(process.env.BENCH_STORE_SIZES), mongodb: sizes(process.env.BENCH_STORE_MONGO_SIZES ?? process.env.BENCH_STORE_SIZES) };
// FerretDB's SQLite handler scans the whole table per page (see docs/performance.md), so it gets fewer samples.
const SAMPLES = { memory: Number(process.env.BENCH_STORE_SAMPLES ?? 200), mongodb: Number(process.env.BENCH_STORE_MONGO_SAMPLES ?? 50) };
const PAGE = 20;
const SECRET = 'bench-store';
const STATUSES: readonly StoredStatus[] = ['available', 'pending', 'sold'];

interface Loader {
  readonly name: string;
  readonly kind: 'memory' | 'mongodb';
  /** An empty store, and a bulk loader that appends pets with ids `from`..`to`. */
  open(): Promise<{ repository: PetRepository; load(from: number, to: number): Promise<void>; close(): Promise<void> }>;
}

const quantile = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

async function timePages(client: PetServiceClient, request: ListPetsRequest, samples: number): Promise<{ p50: number; p99: number }> {
  const call = () =>
    new Promise<ListPetsResponse>((resolve, reject) =>
      client.listPets(request, new Metadata(), (error, response) => (error ? reject(error) : resolve(response))),
    );
  const first = await call();
  if (first.pets.length !== PAGE) throw new Error(`expected a full page, got ${first.pets.length}`);
  for (let warm = 0; warm < Math.min(20, samples / 10); warm += 1) await call();
  const times: number[] = [];
  for (let sample = 0; sample < samples; sample += 1) {
    const start = process.hrtime.bigint();
    await call();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  times.sort((a, b) => a - b);
  return { p50: quantile(times, 0.5), p99: quantile(times, 0.99) };
}

function memoryLoader(): Loader {
  return {
    name: 'memory',
    kind: 'memory',
    async open() {
      const repository = new MemoryPetRepository();
      return {
        repository,
        async load(from, to) {
          for (let id = from; id <= to; id += 1) {
            await repository.create({ name: `pet${id}`, categoryId: 1n, status: STATUSES[id % 3]! });
          }
        },
        close: async () => undefined,
      };
    },
  };
}

function mongoLoader(server: MongoServer): Loader {
  return {
    name: server.kind === 'ferretdb' ? 'mongodb (FerretDB v1, SQLite)' : 'mongodb',
    kind: 'mongodb',
    async open() {
      const database = server.freshDatabase();
      const repository = await MongoPetRepository.connect({ uri: server.uri, database, timeoutMs: 600_000 });
      const raw = new MongoClient(server.uri, { useBigInt64: true });
      const db = raw.db(database);
      return {
        repository,
        async load(from, to) {
          for (let start = from; start <= to; start += 10_000) {
            const end = Math.min(to, start + 9_999);
            const batch = [];
            for (let id = start; id <= end; id += 1) {
              batch.push({ _id: BigInt(id), name: `pet${id}`, categoryId: 1n, status: STATUSES[id % 3]! });
            }
            await db.collection<{ _id: bigint }>('pets').insertMany(batch, { ordered: false });
          }
        },
        async close() {
          await raw.close();
        },
      };
    },
  };
}

async function benchStore(loader: Loader): Promise<string> {
  const store = await loader.open();
  const server = await createServer({ host: '127.0.0.1', port: 0, repository: store.repository, pageTokenSecret: SECRET, storeHealthIntervalMs: 3_600_000 });
  const client = new PetServiceClient(`127.0.0.1:${server.port}`, credentials.createInsecure(), {});
  const tokens = new PageTokenCodec(SECRET);
  const firstPage: Record<number, number> = {};
  const deepPage: Record<number, number> = {};
  let loaded = 0;
  try {
    for (const size of SIZES[loader.kind]) {
      const began = Date.now();
      await store.load(loaded + 1, size);
      loaded = size;
      console.log(`${loader.name}: loaded ${size.toLocaleString('en')} pets in ${((Date.now() - began) / 1000).toFixed(1)} s`);
      for (const status of [undefined, 'sold'] as const) {
        // After `afterId`, a full page of the filter remains: the start, the middle and the end.
        const positions = { start: undefined, middle: Math.floor(size / 2), end: size - 3 * PAGE - 3 };
        for (const [position, afterId] of Object.entries(positions)) {
          const request: ListPetsRequest = {
            pageSize: PAGE,
            status: status === undefined ? PetStatus.PET_STATUS_UNSPECIFIED : PetStatus.PET_STATUS_SOLD,
            pageToken: afterId === undefined ? '' : tokens.encode({ afterId: BigInt(afterId), status }),
          };
          const { p50, p99 } = await timePages(client, request, SAMPLES[loader.kind]);
          console.log(
            `  ${size.toLocaleString('en').padStart(9)} pets  ${(status ?? 'any').padEnd(4)} ${position.padEnd(6)}  p50 ${p50.toFixed(3)} ms  p99 ${p99.toFixed(3)} ms`,
          );
          if (position === 'start' && status === undefined) firstPage[size] = p50;
          if (position !== 'start') deepPage[size] = Math.max(deepPage[size] ?? 0, p50);
        }
      }
    }
  } finally {
    client.close();
    await server.shutdown();
    await store.close();
  }
  const smallest = SIZES[loader.kind][0]!;
  const largest = SIZES[loader.kind].at(-1)!;
  const ratio = deepPage[largest]! / firstPage[smallest]!;
  return `${loader.name}: deep-page p50 at ${largest.toLocaleString('en')} / first-page p50 at ${smallest.toLocaleString('en')} = ${ratio.toFixed(2)} (target <= 1.5)`;
}

async function main(): Promise<void> {
  console.log(`samples per page position after a warm-up: memory ${SAMPLES.memory}, mongodb ${SAMPLES.mongodb}`);
  const results: string[] = [];
  results.push(await benchStore(memoryLoader()));
  const mongo = await startMongoOrSkip({ skip: () => { throw new Error('no MongoDB-wire server: set MONGODB_URI or install FerretDB (.ci/install-ferretdb.sh)'); } } as never);
  try {
    const loader = mongoLoader(mongo);
    results.push(await benchStore(loader));
  } finally {
    await mongo.close();
  }
  console.log('');
  for (const line of results) console.log(line);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
