import { type Pet, PetStatus } from '@petstore/proto';

const STATUS_NAMES: Readonly<Record<number, string>> = {
  [PetStatus.PET_STATUS_AVAILABLE]: 'available',
  [PetStatus.PET_STATUS_PENDING]: 'pending',
  [PetStatus.PET_STATUS_SOLD]: 'sold',
};

/**
 * Renders a Pet as JSON text. The int64 fields arrive from gRPC as decimal strings and are
 * written as bare JSON numbers, digit for digit, so nothing is rounded on the way out; this is
 * also cheaper than building an object for JSON.stringify.
 */
export function petToJson(pet: Pet): string {
  return `{"id":${pet.id},"name":${JSON.stringify(pet.name)},"categoryId":${pet.categoryId},"status":"${STATUS_NAMES[pet.status] ?? 'available'}"}`;
}

export function petsToJson(pets: readonly Pet[]): string {
  return `[${pets.map(petToJson).join(',')}]`;
}

/** The wire enum for a status name the validators already accepted. */
export function toWireStatus(status: string | undefined): PetStatus {
  switch (status) {
    case 'available':
      return PetStatus.PET_STATUS_AVAILABLE;
    case 'pending':
      return PetStatus.PET_STATUS_PENDING;
    case 'sold':
      return PetStatus.PET_STATUS_SOLD;
    default:
      return PetStatus.PET_STATUS_UNSPECIFIED;
  }
}
