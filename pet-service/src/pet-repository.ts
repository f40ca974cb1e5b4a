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

/** How long a create's idempotency key is remembered. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

/**
 * Makes a create safe to retry: within {@link IDEMPOTENCY_WINDOW_MS}, a create with the same key
 * and fingerprint returns the first one's pet and creates nothing; the same key with another
 * fingerprint is refused with ALREADY_EXISTS.
 */
export interface IdempotencyClaim {
  /** The caller's key, already scoped to the caller so that two callers' keys never meet. */
  readonly key: string;
  /** Digest of the validated request. */
  readonly fingerprint: string;
}

export interface CreateResult {
  readonly pet: PetRecord;
  /** True when an earlier create with the same idempotency key made the pet. */
  readonly replayed: boolean;
}

/**
 * Storage of pets. Implementations assign ids that are unique, positive and increasing, and
 * serve a page at any depth for the cost of the first one (keyset pagination on id).
 *
 * Failures of the backing store are thrown as {@link PetServiceError} with code UNAVAILABLE
 * so that callers can tell "store down" from a bug.
 */
export interface PetRepository {
  create(pet: NewPetRecord, idempotency?: IdempotencyClaim): Promise<CreateResult>;
  get(id: bigint): Promise<PetRecord | undefined>;
  list(query: ListQuery): Promise<PetRecord[]>;
  /** Resolves when the backing store answers; health checks call it. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
