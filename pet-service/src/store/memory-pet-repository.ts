import { IDEMPOTENCY_WINDOW_MS, type IdempotencyClaim } from '../pets/idempotency';
import type { NewPetRecord, PetChange, PetRecord, StoredStatus } from '../pets/pet-record';
import type { CreateResult, ListQuery, PetRepository, UpdateResult, VersionCondition } from './pet-repository';
import { PetServiceError } from '../pets/pet-service-error';
import { applyChange, checkVersion } from '../pets/pet-change';

export interface MemoryPetRepositoryOptions {
  /** Ids continue after this one (tests use it to reach the int64 range). */
  readonly lastId?: bigint;
  /** Milliseconds since the epoch; idempotency keys expire on it. */
  readonly now?: () => number;
  /** Idempotency keys remembered at most; past it the oldest is forgotten. Default: no bound. */
  readonly maxIdempotencyKeys?: number;
}

/** A remembered idempotent create or change: the pet it answered with. */
interface RememberedCreate {
  readonly fingerprint: string;
  readonly pet: PetRecord;
  readonly expiresAt: number;
}

/**
 * The embedded store: one process, nothing survives a restart. Each index is an array sorted by id
 * (records are appended in id order; a change of status moves a record between two of them, a
 * delete takes it out), so a page at any depth is a binary search plus a slice. Every operation is
 * synchronous once it starts, so a change's check and write are one step: no other operation
 * runs between them.
 *
 * Idempotency keys (of creates and of changes) are kept for their window, and at most `maxIdempotencyKeys` of them, so that
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
    this.remember(idempotency, record, now);
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

  async update(id: bigint, change: PetChange, versions: VersionCondition, idempotency?: IdempotencyClaim): Promise<UpdateResult> {
    const now = this.now();
    if (idempotency !== undefined) {
      this.forgetExpired(now);
      const earlier = this.creates.get(idempotency.key);
      if (earlier !== undefined) {
        if (earlier.fingerprint !== idempotency.fingerprint) throw PetServiceError.idempotencyConflict();
        return { pet: earlier.pet, changed: true, replayed: true };
      }
    }
    const pet = this.byId.get(id);
    if (pet === undefined) throw PetServiceError.notFound(id);
    const changed = applyChange(pet, change, versions);
    if (changed === undefined) return { pet, changed: false, replayed: false };
    this.byId.set(id, changed);
    this.all[indexOf(this.all, id)] = changed;
    if (changed.status === pet.status) {
      const index = this.byStatus[pet.status];
      index[indexOf(index, id)] = changed;
    } else {
      const from = this.byStatus[pet.status];
      from.splice(indexOf(from, id), 1);
      const to = this.byStatus[changed.status];
      to.splice(firstAfter(to, id), 0, changed);
    }
    if (idempotency !== undefined) this.remember(idempotency, changed, now);
    return { pet: changed, changed: true, replayed: false };
  }

  async delete(id: bigint, versions: VersionCondition): Promise<void> {
    const pet = this.byId.get(id);
    if (pet === undefined) throw PetServiceError.notFound(id);
    checkVersion(pet, versions);
    this.byId.delete(id);
    this.all.splice(indexOf(this.all, id), 1);
    const index = this.byStatus[pet.status];
    index.splice(indexOf(index, id), 1);
  }

  /** How many idempotency keys are remembered (a metric). */
  get idempotencyKeys(): number {
    return this.creates.size;
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {}

  private remember(idempotency: IdempotencyClaim, pet: PetRecord, now: number): void {
    this.creates.set(idempotency.key, { fingerprint: idempotency.fingerprint, pet, expiresAt: now + IDEMPOTENCY_WINDOW_MS });
    if (this.creates.size > this.maxIdempotencyKeys) this.creates.delete(this.creates.keys().next().value!);
  }

  private insert(pet: NewPetRecord): PetRecord {
    const record: PetRecord = { id: ++this.lastId, name: pet.name, categoryId: pet.categoryId, status: pet.status, version: 0 };
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

/** The index of the record `id` in `sorted`, which holds it. */
function indexOf(sorted: readonly PetRecord[], id: bigint): number {
  return firstAfter(sorted, id) - 1;
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
