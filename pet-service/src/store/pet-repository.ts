import type { IdempotencyClaim } from '../pets/idempotency';
import type { NewPetRecord, PetRecord, StoredStatus } from '../pets/pet-record';

/** One keyset page: pets with `id > afterId`, in ascending id order. */
export interface ListQuery {
  readonly status?: StoredStatus;
  readonly afterId?: bigint;
  readonly limit: number;
}

export interface CreateResult {
  readonly pet: PetRecord;
  /** True when an earlier create with the same idempotency key made the pet. */
  readonly replayed: boolean;
}

/**
 * Storage of pets. Implementations assign ids that are unique and positive, increasing within one
 * instance (across the MongoDB store's replicas ids are not in creation order), and serve a page at
 * any depth for the cost of the first one (keyset pagination on id).
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
