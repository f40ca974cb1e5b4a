/** Availability of a stored pet, as kept by every store. */
export type StoredStatus = 'available' | 'pending' | 'sold';

/** A stored pet. Ids and category ids are int64, so they are bigints end to end. */
export interface PetRecord {
  readonly id: bigint;
  readonly name: string;
  readonly categoryId: bigint;
  readonly status: StoredStatus;
}

/** A validated pet that has no id yet. */
export type NewPetRecord = Omit<PetRecord, 'id'>;

/** One keyset page: pets with `id > afterId`, in ascending id order. */
export interface ListQuery {
  readonly status?: StoredStatus;
  readonly afterId?: bigint;
  readonly limit: number;
}

/**
 * Storage of pets. Implementations assign ids that are unique, positive and increasing, and
 * serve a page at any depth for the cost of the first one (keyset pagination on id).
 *
 * Failures of the backing store are thrown as {@link PetServiceError} with code UNAVAILABLE
 * so that callers can tell "store down" from a bug.
 */
export interface PetRepository {
  create(pet: NewPetRecord): Promise<PetRecord>;
  get(id: bigint): Promise<PetRecord | undefined>;
  list(query: ListQuery): Promise<PetRecord[]>;
  /** Resolves when the backing store answers; health checks call it. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
