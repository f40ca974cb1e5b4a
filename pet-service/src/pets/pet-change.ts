import { etagOf, STATUS_TRANSITIONS } from '@petstore/proto';
import type { PetChange, PetRecord } from './pet-record';
import { PetServiceError } from './pet-service-error';
import type { VersionCondition } from '../store/pet-repository';

/**
 * What a change of `pet` comes to, by the rules every store applies in this order: an etag that
 * is not the pet's (ABORTED), then a change of status the table refuses (FAILED_PRECONDITION),
 * then whether anything differs. The memory store applies it as its write; the MongoDB store
 * applies the same rules in its write's filter and uses this to explain a write that matched
 * nothing.
 * @throws PetServiceError ABORTED, FAILED_PRECONDITION
 * @returns the pet after the change, or undefined when nothing differs
 */
export function applyChange(pet: PetRecord, change: PetChange, versions: VersionCondition): PetRecord | undefined {
  checkVersion(pet, versions);
  if (change.status !== undefined && !STATUS_TRANSITIONS[pet.status].includes(change.status)) {
    throw PetServiceError.invalidTransition({ from: pet.status, to: change.status });
  }
  const changed: PetRecord = {
    id: pet.id,
    name: change.name ?? pet.name,
    categoryId: change.categoryId ?? pet.categoryId,
    status: change.status ?? pet.status,
    version: pet.version + 1,
  };
  const differs = changed.name !== pet.name || changed.categoryId !== pet.categoryId || changed.status !== pet.status;
  return differs ? changed : undefined;
}

/** Throws ABORTED when `pet`'s version is not one of `versions`. */
export function checkVersion(pet: PetRecord, versions: VersionCondition): void {
  if (versions !== undefined && !versions.includes(pet.version)) throw PetServiceError.etagMismatch(etagOf(pet.version));
}
