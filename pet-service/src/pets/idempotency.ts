import { createHash } from 'node:crypto';
import type { Metadata } from '@grpc/grpc-js';
import { CALLER_ID_METADATA, IDEMPOTENCY_KEY_METADATA, IDEMPOTENCY_KEY_PATTERN, IDEMPOTENCY_KEY_PROBLEM, ONE_VALUE_PROBLEM } from '@petstore/proto';
import type { NewPetRecord } from './pet-record';
import type { ValidUpdate } from './pet-validation';
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
 * A create's idempotency key, scoped to its caller, or undefined when the caller sent no key.
 * @throws PetServiceError INVALID_ARGUMENT naming every invalid entry: the key's, then the caller id's.
 */
export function idempotencyKeyOf(metadata: Metadata): string | undefined {
  const key = metadata.get(IDEMPOTENCY_KEY_METADATA);
  if (key.length === 0) return undefined;
  const [, caller] = PetServiceError.allValid(
    () => validEntry(IDEMPOTENCY_KEY_METADATA, key),
    () => {
      const values = metadata.get(CALLER_ID_METADATA);
      return values.length === 0 ? '' : validEntry(CALLER_ID_METADATA, values);
    },
  );
  // A space cannot occur in either part, so the scoped key is unambiguous.
  return `${caller} ${key[0] as string}`;
}

function validEntry(name: string, values: readonly unknown[]): string {
  if (isRepeated(values)) throw PetServiceError.invalidArgument(name, ONE_VALUE_PROBLEM);
  if (typeof values[0] !== 'string' || !IDEMPOTENCY_KEY_PATTERN.test(values[0])) throw PetServiceError.invalidArgument(name, IDEMPOTENCY_KEY_PROBLEM);
  return values[0];
}

/**
 * The idempotency claim of a create under its scoped `key`. The fingerprint is of the validated
 * pet, so `{"status": "available"}` and an omitted status are the same request.
 */
export function idempotencyClaim(key: string, pet: NewPetRecord): IdempotencyClaim {
  const fingerprint = createHash('sha256')
    .update(JSON.stringify([pet.name, pet.categoryId.toString(), pet.status]))
    .digest('hex');
  return { key, fingerprint };
}

/**
 * The idempotency claim of a change of the pet `update.id` under the caller-scoped `key`. Keys of
 * changes are scoped to the pet too, so one key sent to two pets makes two changes, and never meet
 * a create's (a space more: `pet:<id> <caller> <key>`). The fingerprint covers what the change asks:
 * the fields, their validated values and the etag condition.
 */
export function changeIdempotencyClaim(key: string, update: ValidUpdate, etag: string): IdempotencyClaim {
  const { change } = update;
  const fingerprint = createHash('sha256')
    .update(JSON.stringify([update.fields, change.name ?? null, change.categoryId?.toString() ?? null, change.status ?? null, etag]))
    .digest('hex');
  return { key: `pet:${update.id} ${key}`, fingerprint };
}
