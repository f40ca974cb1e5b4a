import type { IdempotencyClaim } from '../pets/idempotency';
import type { NewPetRecord, PetChange, PetRecord, StoredStatus } from '../pets/pet-record';

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

export interface UpdateResult {
  /** The pet after the change; unchanged (same version) when the change set every field to its value. */
  readonly pet: PetRecord;
  /** False when nothing differed: nothing was written. */
  readonly changed: boolean;
  /** True when an earlier change with the same idempotency key made it: `pet` is as that change left it. */
  readonly replayed: boolean;
}

/**
 * The versions a change or delete may start from (the versions a caller's etags name); undefined
 * for any version (no etag, or `*`).
 */
export type VersionCondition = readonly number[] | undefined;

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
  /**
   * Changes the pet `id` as one conditional write: only from one of `versions` (when given), and
   * for a change of status only from a status the table leads from (proto/contract.ts), raising
   * its version by one. A change that sets every field to its value writes nothing. With an
   * idempotency claim, a retry answers the first change's pet (even if the pet has changed or
   * gone since) and changes nothing; the key with another change is ALREADY_EXISTS.
   * @throws PetServiceError NOT_FOUND, ABORTED (a version not in `versions`, with the current
   *   etag; or, without one, `PetServiceError.keptChanging` where a store's write can lose
   *   to concurrent changes), FAILED_PRECONDITION (a transition the table refuses), ALREADY_EXISTS
   */
  update(id: bigint, change: PetChange, versions: VersionCondition, idempotency?: IdempotencyClaim): Promise<UpdateResult>;
  /**
   * Deletes the pet `id` (only at one of `versions`, when given); it is then never found again,
   * nor made again by the replay of the create that made it.
   * @throws PetServiceError NOT_FOUND, ABORTED (as {@link update})
   */
  delete(id: bigint, versions: VersionCondition): Promise<void>;
  /** Resolves when the backing store answers; health checks call it. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
