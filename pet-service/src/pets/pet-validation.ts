import {
  type CreatePetRequest,
  DEFAULT_PAGE_SIZE,
  type DeletePetRequest,
  ETAG_CONDITION_PROBLEM,
  type GetPetRequest,
  isPositiveInt64,
  type ListPetsRequest,
  MAX_PAGE_SIZE,
  NAME_LENGTH_PROBLEM,
  NAME_MAX_CHARACTERS,
  NAME_MIN_CHARACTERS,
  NAME_PATTERN,
  NAME_PATTERN_PROBLEM,
  parseEtagCondition,
  type UpdatePetRequest,
} from '@petstore/proto';
import type { NewPetRecord, PetChange, StoredStatus } from './pet-record';
import type { VersionCondition } from '../store/pet-repository';
import { PetServiceError } from './pet-service-error';
import { toStoredStatus } from './pet-status';

/**
 * The service's input rules. They live here, not only in the gateway, so that internal gRPC
 * callers get exactly what HTTP clients get. A failure names every offending field, one problem
 * each, in the message's field order.
 */

export function validateCreate(request: CreatePetRequest): NewPetRecord {
  const [name, categoryId, status] = PetServiceError.allValid(
    () => validName(request.name),
    () => positiveInt64('category_id', request.categoryId),
    () => (request.status === 0 ? ('available' as const) : storedStatus(request.status)),
  );
  return { name, categoryId, status };
}

/** An UpdatePet or DeletePet, validated: the pet, and the versions its etag allows (undefined: any). */
export interface ValidTarget {
  readonly id: bigint;
  readonly versions: VersionCondition;
}

export interface ValidUpdate extends ValidTarget {
  readonly change: PetChange;
  /** The mask's fields, in the message's order: what an idempotency key's fingerprint covers. */
  readonly fields: readonly UpdatableField[];
}

/** The fields of a Pet an update may name in its mask, in the message's order. */
const UPDATABLE = ['name', 'category_id', 'status'] as const;
type UpdatableField = (typeof UPDATABLE)[number];
/** Pet fields the service sets alone: a mask naming one is refused, not ignored, so a caller's mistake shows. */
const NOT_UPDATABLE: Readonly<Record<string, string>> = {
  id: 'id cannot be changed: it names the pet',
  etag: 'etag is output only: send the etag you saw as the request\'s etag',
};

/**
 * An UpdatePet (AIP-134): the pet's id, the mask's fields with their new values (each checked as
 * CreatePet checks it), and the etag condition. An absent or empty mask stands for the fields of
 * `pet` that are set; a mask of `*` for all three. Every invalid field at once, `pet.<field>`
 * named by its path in the request.
 */
export function validateUpdate(request: UpdatePetRequest): ValidUpdate {
  const pet = request.pet;
  const [id, fields, versions] = PetServiceError.allValid(
    () => (pet === undefined ? invalid('pet', 'is required: it names the pet and holds the new values') : positiveInt64('pet.id', pet.id)),
    () => maskFields(request),
    () => versionsOf(request.etag),
  );
  const change: { name?: string; categoryId?: bigint; status?: StoredStatus } = {};
  PetServiceError.allValid(
    ...fields.map((field) => () => {
      if (field === 'name') change.name = validName(pet!.name, 'pet.name');
      else if (field === 'category_id') change.categoryId = positiveInt64('pet.category_id', pet!.categoryId);
      else if (pet!.status === 0) invalid('pet.status', 'must be set: PET_STATUS_AVAILABLE, PET_STATUS_PENDING or PET_STATUS_SOLD');
      else change.status = storedStatus(pet!.status, 'pet.status');
    }),
  );
  return { id, versions, change, fields };
}

/** A DeletePet (AIP-135): the pet's id and the etag condition. */
export function validateDelete(request: DeletePetRequest): ValidTarget {
  const [id, versions] = PetServiceError.allValid(
    () => positiveInt64('id', request.id),
    () => versionsOf(request.etag),
  );
  return { id, versions };
}

function maskFields(request: UpdatePetRequest): UpdatableField[] {
  const paths = request.updateMask ?? [];
  if (paths.length === 0) {
    // AIP-134: no mask is the fields the request sets.
    const pet = request.pet;
    const set = UPDATABLE.filter((field) =>
      pet === undefined ? false : field === 'name' ? pet.name !== '' : field === 'category_id' ? pet.categoryId !== '0' : pet.status !== 0,
    );
    if (set.length === 0 && pet !== undefined) invalid('update_mask', 'names no field, and pet sets none: nothing to change');
    return set;
  }
  const fields = new Set<UpdatableField>();
  for (const path of paths) {
    if (path === '*') UPDATABLE.forEach((field) => fields.add(field));
    else if ((UPDATABLE as readonly string[]).includes(path)) fields.add(path as UpdatableField);
    else invalid('update_mask', NOT_UPDATABLE[path] ?? `${JSON.stringify(path)} is not a field of Pet that can be changed (name, category_id, status, or *)`);
  }
  return UPDATABLE.filter((field) => fields.has(field));
}

/** The versions an etag condition allows; undefined when it allows any (none, or `*`). */
function versionsOf(etag: string): VersionCondition {
  if (etag === '') return undefined;
  const condition = parseEtagCondition(etag);
  if (condition === undefined) invalid('etag', ETAG_CONDITION_PROBLEM);
  return condition!.any ? undefined : condition!.versions;
}

function invalid(field: string, problem: string): never {
  throw PetServiceError.invalidArgument(field, problem);
}

function validName(name: string, field = 'name'): string {
  // Characters are code points, as JSON Schema counts them, not UTF-16 units.
  const length = [...name].length;
  if (length < NAME_MIN_CHARACTERS || length > NAME_MAX_CHARACTERS) throw PetServiceError.invalidArgument(field, NAME_LENGTH_PROBLEM);
  if (!NAME_PATTERN.test(name)) throw PetServiceError.invalidArgument(field, NAME_PATTERN_PROBLEM);
  return name;
}

export function validateGet(request: GetPetRequest): bigint {
  return positiveInt64('id', request.id);
}

export interface ValidListRequest {
  readonly pageSize: number;
  readonly status: StoredStatus | undefined;
}

export function validateList(request: ListPetsRequest): ValidListRequest {
  const [pageSize, status] = PetServiceError.allValid(
    () => {
      if (request.pageSize < 0 || request.pageSize > MAX_PAGE_SIZE) {
        throw PetServiceError.invalidArgument('page_size', `must be 0 (default ${DEFAULT_PAGE_SIZE}) to ${MAX_PAGE_SIZE}`);
      }
      return request.pageSize === 0 ? DEFAULT_PAGE_SIZE : request.pageSize;
    },
    () => (request.status === 0 ? undefined : storedStatus(request.status)),
  );
  return { pageSize, status };
}

function storedStatus(status: number, field = 'status'): StoredStatus {
  const stored = toStoredStatus(status);
  if (stored === undefined) throw PetServiceError.invalidArgument(field, `unknown value ${status}`);
  return stored;
}

// ts-proto hands int64 over as a decimal string (forceLong=string), so no precision is lost.
function positiveInt64(field: string, value: string): bigint {
  if (!isPositiveInt64(value)) {
    throw PetServiceError.invalidArgument(field, 'must be a positive int64');
  }
  return BigInt(value);
}
