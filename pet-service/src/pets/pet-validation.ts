import {
  type CreatePetRequest,
  DEFAULT_PAGE_SIZE,
  type GetPetRequest,
  isPositiveInt64,
  type ListPetsRequest,
  MAX_PAGE_SIZE,
  NAME_LENGTH_PROBLEM,
  NAME_MAX_CHARACTERS,
  NAME_MIN_CHARACTERS,
  NAME_PATTERN,
  NAME_PATTERN_PROBLEM,
} from '@petstore/proto';
import type { NewPetRecord, StoredStatus } from './pet-record';
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

function validName(name: string): string {
  // Characters are code points, as JSON Schema counts them, not UTF-16 units.
  const length = [...name].length;
  if (length < NAME_MIN_CHARACTERS || length > NAME_MAX_CHARACTERS) throw PetServiceError.invalidArgument('name', NAME_LENGTH_PROBLEM);
  if (!NAME_PATTERN.test(name)) throw PetServiceError.invalidArgument('name', NAME_PATTERN_PROBLEM);
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

function storedStatus(status: number): StoredStatus {
  const stored = toStoredStatus(status);
  if (stored === undefined) throw PetServiceError.invalidArgument('status', `unknown value ${status}`);
  return stored;
}

// ts-proto hands int64 over as a decimal string (forceLong=string), so no precision is lost.
function positiveInt64(field: string, value: string): bigint {
  if (!isPositiveInt64(value)) {
    throw PetServiceError.invalidArgument(field, 'must be a positive int64');
  }
  return BigInt(value);
}
