/** Availability of a stored pet, as kept by every store. */
export type StoredStatus = 'available' | 'pending' | 'sold';

/** A stored pet. Ids and category ids are int64, so they are bigints end to end. */
export interface PetRecord {
  readonly id: bigint;
  readonly name: string;
  readonly categoryId: bigint;
  readonly status: StoredStatus;
  /**
   * Raised by one with every change; a pet stored without one (before versions existed) is 0, as
   * is every new pet. Its etag is `etagOf(version)`.
   */
  readonly version: number;
}

/** A validated pet that has no id yet. */
export type NewPetRecord = Omit<PetRecord, 'id' | 'version'>;

/** The fields a change sets, validated; those left out keep their values. */
export interface PetChange {
  readonly name?: string;
  readonly categoryId?: bigint;
  readonly status?: StoredStatus;
}
