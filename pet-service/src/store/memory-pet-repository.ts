import { IDEMPOTENCY_WINDOW_MS, type IdempotencyClaim } from '../pets/idempotency';
import type { NewPetRecord, PetRecord, StoredStatus } from '../pets/pet-record';
import type { CreateResult, ListQuery, PetRepository } from './pet-repository';
import { PetServiceError } from '../pets/pet-service-error';

export interface MemoryPetRepositoryOptions {
  /** Ids continue after this one (tests use it to reach the int64 range). */
  readonly lastId?: bigint;
  /** Milliseconds since the epoch; idempotency keys expire on it. */
  readonly now?: () => number;
  /** Idempotency keys remembered at most; past it the oldest is forgotten. Default: no bound. */
  readonly maxIdempotencyKeys?: number;
}

interface RememberedCreate {
  readonly fingerprint: string;
  readonly pet: PetRecord;
  readonly expiresAt: number;
}

/**
 * The embedded store: one process, nothing survives a restart. Records are appended in id order,
 * so each index is a sorted array and a page at any depth is a binary search plus a slice.
 *
 * Idempotency keys are kept for their window, and at most `maxIdempotencyKeys` of them, so that
 * creates with distinct keys cannot grow the process without bound. A retry
 * whose key was forgotten early creates a second pet, so the cap must cover the keys a window of
 * retries can bring.
 */
export class MemoryPetRepository implements PetRepository {
  private lastId: bigint;
  private readonly now: () => number;
  private readonly maxIdempotencyKeys: number;
  private readonly byId = new Map<bigint, PetRecord>();
  private readonly all: PetRecord[] = [];
  private readonly byStatus: Record<StoredStatus, PetRecord[]> = { available: [], pending: [], sold: [] };
  /** In insertion order, which is expiry order, so expired and evicted keys leave from the front. */
  private readonly creates = new Map<string, RememberedCreate>();

  constructor(options: MemoryPetRepositoryOptions = {}) {
    this.lastId = options.lastId ?? 0n;
    this.now = options.now ?? Date.now;
    this.maxIdempotencyKeys = options.maxIdempotencyKeys ?? Number.POSITIVE_INFINITY;
  }

  async create(pet: NewPetRecord, idempotency?: IdempotencyClaim): Promise<CreateResult> {
    if (idempotency === undefined) return { pet: this.insert(pet), replayed: false };
    const now = this.now();
    this.forgetExpired(now);
    const earlier = this.creates.get(idempotency.key);
    if (earlier !== undefined) {
      if (earlier.fingerprint !== idempotency.fingerprint) throw PetServiceError.idempotencyConflict();
      return { pet: earlier.pet, replayed: true };
    }
    const record = this.insert(pet);
    this.creates.set(idempotency.key, { fingerprint: idempotency.fingerprint, pet: record, expiresAt: now + IDEMPOTENCY_WINDOW_MS });
    if (this.creates.size > this.maxIdempotencyKeys) this.creates.delete(this.creates.keys().next().value!);
    return { pet: record, replayed: false };
  }

  async get(id: bigint, signal?: AbortSignal): Promise<PetRecord | undefined> {
    signal?.throwIfAborted();
    return this.byId.get(id);
  }

  async list(query: ListQuery, signal?: AbortSignal): Promise<PetRecord[]> {
    signal?.throwIfAborted();
    const index = query.status === undefined ? this.all : this.byStatus[query.status];
    const start = query.afterId === undefined ? 0 : firstAfter(index, query.afterId);
    return index.slice(start, start + query.limit);
  }

  /** How many idempotency keys are remembered (a metric). */
  get idempotencyKeys(): number {
    return this.creates.size;
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {}

  private insert(pet: NewPetRecord): PetRecord {
    const record: PetRecord = { id: ++this.lastId, name: pet.name, categoryId: pet.categoryId, status: pet.status };
    this.byId.set(record.id, record);
    this.all.push(record);
    this.byStatus[record.status].push(record);
    return record;
  }

  private forgetExpired(now: number): void {
    for (const [key, remembered] of this.creates) {
      if (remembered.expiresAt > now) return;
      this.creates.delete(key);
    }
  }
}

function firstAfter(sorted: readonly PetRecord[], id: bigint): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (sorted[mid]!.id <= id) low = mid + 1;
    else high = mid;
  }
  return low;
}
