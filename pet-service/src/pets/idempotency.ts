import { createHash } from 'node:crypto';
import type { Metadata } from '@grpc/grpc-js';
import { CALLER_ID_METADATA, IDEMPOTENCY_KEY_METADATA, IDEMPOTENCY_KEY_PATTERN, IDEMPOTENCY_KEY_PROBLEM, ONE_VALUE_PROBLEM } from '@petstore/proto';
import type { NewPetRecord } from './pet-record';
import { PetServiceError } from './pet-service-error';

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

/**
 * Whether a metadata entry was sent more than once. grpc-js joins repeated text entries into one
 * value with ", ", which no valid key or caller id contains (they have no spaces).
 */
function isRepeated(values: readonly unknown[]): boolean {
  return values.length > 1 || (typeof values[0] === 'string' && values[0].includes(', '));
}

/**
 * The idempotency claim of a create, or undefined when the caller sent no key. The fingerprint is
 * of the validated pet, so `{"status": "available"}` and an omitted status are the same request.
 */
export function idempotencyClaimOf(metadata: Metadata, pet: NewPetRecord): IdempotencyClaim | undefined {
  const key = metadata.get(IDEMPOTENCY_KEY_METADATA);
  if (key.length === 0) return undefined;
  if (isRepeated(key)) throw PetServiceError.invalidArgument(IDEMPOTENCY_KEY_METADATA, ONE_VALUE_PROBLEM);
  if (typeof key[0] !== 'string' || !IDEMPOTENCY_KEY_PATTERN.test(key[0])) {
    throw PetServiceError.invalidArgument(IDEMPOTENCY_KEY_METADATA, IDEMPOTENCY_KEY_PROBLEM);
  }
  const caller = metadata.get(CALLER_ID_METADATA);
  if (isRepeated(caller)) throw PetServiceError.invalidArgument(CALLER_ID_METADATA, ONE_VALUE_PROBLEM);
  if (caller.length === 1 && (typeof caller[0] !== 'string' || !IDEMPOTENCY_KEY_PATTERN.test(caller[0]))) {
    throw PetServiceError.invalidArgument(CALLER_ID_METADATA, IDEMPOTENCY_KEY_PROBLEM);
  }
  const fingerprint = createHash('sha256')
    .update(JSON.stringify([pet.name, pet.categoryId.toString(), pet.status]))
    .digest('hex');
  // A space cannot occur in either part, so the scoped key is unambiguous.
  return { key: `${(caller[0] as string | undefined) ?? ''} ${key[0]}`, fingerprint };
}
