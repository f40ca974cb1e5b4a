import { PetStatus } from '@petstore/proto';
import type { StoredStatus } from './pet-record';

const TO_STORED = new Map<number, StoredStatus>([
  [PetStatus.PET_STATUS_AVAILABLE, 'available'],
  [PetStatus.PET_STATUS_PENDING, 'pending'],
  [PetStatus.PET_STATUS_SOLD, 'sold'],
]);

const TO_WIRE: Record<StoredStatus, PetStatus> = {
  available: PetStatus.PET_STATUS_AVAILABLE,
  pending: PetStatus.PET_STATUS_PENDING,
  sold: PetStatus.PET_STATUS_SOLD,
};

/** The stored form of a wire status; undefined for UNSPECIFIED and for numbers outside the enum. */
export function toStoredStatus(status: number): StoredStatus | undefined {
  return TO_STORED.get(status);
}

export function toWireStatus(status: StoredStatus): PetStatus {
  return TO_WIRE[status];
}
