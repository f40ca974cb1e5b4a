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
 *
 * A read given a `signal` stops when it aborts, as far as the store can stop it, and rejects with
 * the signal's reason: its caller has gone, and the work would be for nobody. A create takes no
 * signal: once started it finishes (within the store's timeout), since a write cut off halfway
 * leaves its outcome unknown to everyone.
 */
export interface PetRepository {
  create(pet: NewPetRecord, idempotency?: IdempotencyClaim): Promise<CreateResult>;
  get(id: bigint, signal?: AbortSignal): Promise<PetRecord | undefined>;
  list(query: ListQuery, signal?: AbortSignal): Promise<PetRecord[]>;
  /** Resolves when the backing store answers; health checks call it. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
