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
