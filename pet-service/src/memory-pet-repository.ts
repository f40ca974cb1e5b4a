import type { ListQuery, NewPetRecord, PetRecord, PetRepository, StoredStatus } from './pet-repository';

/**
 * The embedded store: one process, nothing survives a restart. Records are appended in id order,
 * so each index is a sorted array and a page at any depth is a binary search plus a slice.
 */
export class MemoryPetRepository implements PetRepository {
  /** @param lastId ids continue after this one (tests use it to reach the int64 range). */
  constructor(private lastId = 0n) {}

  private readonly byId = new Map<bigint, PetRecord>();
  private readonly all: PetRecord[] = [];
  private readonly byStatus: Record<StoredStatus, PetRecord[]> = { available: [], pending: [], sold: [] };

  async create(pet: NewPetRecord): Promise<PetRecord> {
    const record: PetRecord = { id: ++this.lastId, name: pet.name, categoryId: pet.categoryId, status: pet.status };
    this.byId.set(record.id, record);
    this.all.push(record);
    this.byStatus[record.status].push(record);
    return record;
  }

  async get(id: bigint): Promise<PetRecord | undefined> {
    return this.byId.get(id);
  }

  async list(query: ListQuery): Promise<PetRecord[]> {
    const index = query.status === undefined ? this.all : this.byStatus[query.status];
    const start = query.afterId === undefined ? 0 : firstAfter(index, query.afterId);
    return index.slice(start, start + query.limit);
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {}
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
