/**
 * What the benchmarks share: CPU and memory accounting from /proc, seeding a pet service over
 * gRPC, and ListPets load through the gateway's own client.
 */
import { readFileSync } from 'node:fs';
import { credentials, Metadata } from '@grpc/grpc-js';
import { type ListPetsRequest, PetServiceClient, PetStatus } from '@petstore/proto';
import type { PetClient } from '../gateway/src/pet-service-client/pet-client';
import type { ServiceProcess } from '../system-test/support/service-process';

/** User and system CPU seconds of a process, from /proc (clock ticks of 1/100 s). */
export function cpuTimes(pid: number): { user: number; system: number } {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 };
  } catch {
    return { user: 0, system: 0 }; // exited meanwhile
  }
}

/** User plus system CPU seconds of a process. */
export function cpuSeconds(pid: number): number {
  const { user, system } = cpuTimes(pid);
  return user + system;
}

/** A process's memory from one read of its /proc status, in MB. */
export interface ProcessMemory {
  /** RSS now (VmRSS), and split into anonymous memory and mapped files (the executable's code pages among them). */
  readonly rss: number;
  readonly anon: number;
  readonly file: number;
  /** Peak RSS (VmHWM) since start-up, or since the peak was last reset (proc(5), clear_refs). */
  readonly peak: number;
}

/** A process's memory (see {@link ProcessMemory}); every figure NaN once it has exited, or is exiting. */
export function memoryMb(pid: number): ProcessMemory {
  let status = '';
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    // Gone: every field below reads NaN.
  }
  const mb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) / 1024;
  return { rss: mb('VmRSS'), anon: mb('RssAnon'), file: mb('RssFile'), peak: mb('VmHWM') };
}

/**
 * The pet service's Node flags in every benchmark, as in its image (docs/operations.md): live
 * heap after a full GC is under 20 MB, and without a ceiling V8 lets garbage pile up to ~80 MB
 * between major collections.
 */
export const PET_SERVICE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4', '--max-old-space-size=128'];

/** `BENCH_CPU_PROF=dir`: each service writes a V8 CPU profile there on exit (NODE_OPTIONS refuses `--cpu-prof`). */
export function profileFlags(): string[] {
  const dir = process.env.BENCH_CPU_PROF;
  return dir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${dir}`];
}

export const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Creates `count` pets (three statuses, fifty categories), a hundred at a time. */
export async function seed(port: number, count: number): Promise<void> {
  const client = new PetServiceClient(`127.0.0.1:${port}`, credentials.createInsecure());
  const create = (index: number) =>
    new Promise<void>((resolve, reject) =>
      client.createPet({ name: `pet-${index}`, categoryId: String(1 + (index % 50)), status: 1 + (index % 3) }, (error) =>
        error ? reject(error) : resolve(),
      ),
    );
  for (let start = 0; start < count; start += 100) {
    await Promise.all(Array.from({ length: Math.min(100, count - start) }, (_, offset) => create(start + offset)));
  }
  client.close();
}

/** The first page of 20, no filter: the page the gateway's read benchmark asks for. */
export const LIST_20: ListPetsRequest = { pageSize: 20, pageToken: '', status: PetStatus.PET_STATUS_UNSPECIFIED };

/**
 * Keeps `inFlight` ListPets calls of 20 running for `seconds`; resolves with each completed call's
 * latency in ms. Each call carries fresh metadata, as the gateway's do.
 */
export async function listPetsFor(client: PetClient, seconds: number, inFlight: number): Promise<number[]> {
  const latencies: number[] = [];
  const end = Date.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (Date.now() < end) {
        const start = performance.now();
        await client.listPets(LIST_20, new Metadata());
        latencies.push(performance.now() - start);
      }
    }),
  );
  return latencies;
}

/**
 * The harness keeps the services' log lines only until they are up: the gateway writes one per
 * request, and parsing and holding them all would cost the load generator CPU on the same cores
 * and hundreds of MB by the end of the run. The pipe keeps flowing, so no service ever blocks on it.
 */
export function stopCollectingLogs(service: ServiceProcess): void {
  service.child.stdout!.removeAllListeners('data');
}
