import { createHash } from 'node:crypto';
import type { Metadata } from '@grpc/grpc-js';
import { CALLER_ID_METADATA, IDEMPOTENCY_KEY_METADATA } from '@petstore/proto';
import type { IdempotencyClaim, NewPetRecord } from './pet-repository';
import { PetServiceError } from './pet-service-error';

// Visible ASCII, as in the gateway's OpenAPI document; the bound keeps stored keys small.
const KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * The idempotency claim of a create, or undefined when the caller sent no key. The fingerprint is
 * of the validated pet, so `{"status": "available"}` and an omitted status are the same request.
 */
export function idempotencyClaimOf(metadata: Metadata, pet: NewPetRecord): IdempotencyClaim | undefined {
  const key = metadata.get(IDEMPOTENCY_KEY_METADATA);
  if (key.length === 0) return undefined;
  if (key.length > 1 || typeof key[0] !== 'string' || !KEY.test(key[0])) {
    throw PetServiceError.invalidArgument(IDEMPOTENCY_KEY_METADATA, 'must be one value of 1 to 255 visible ASCII characters');
  }
  const caller = metadata.get(CALLER_ID_METADATA);
  if (caller.length > 1 || (caller.length === 1 && (typeof caller[0] !== 'string' || !KEY.test(caller[0])))) {
    throw PetServiceError.invalidArgument(CALLER_ID_METADATA, 'must be one value of 1 to 255 visible ASCII characters');
  }
  const fingerprint = createHash('sha256')
    .update(JSON.stringify([pet.name, pet.categoryId.toString(), pet.status]))
    .digest('hex');
  // A space cannot occur in either part, so the scoped key is unambiguous.
  return { key: `${(caller[0] as string | undefined) ?? ''} ${key[0]}`, fingerprint };
}
