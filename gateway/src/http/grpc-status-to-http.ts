import { type Metadata, status as Status } from '@grpc/grpc-js';
import { currentEtagOf, fieldViolationsMessage, fieldViolationsOf, IDEMPOTENCY_KEY_METADATA } from '@petstore/proto';
import { ApiError, type ErrorCode } from './api-error';

interface Translation {
  readonly status: number;
  readonly code: ErrorCode;
  /** Whether the pet service's message is fit for clients; otherwise `fallback` is shown. */
  readonly passMessage: boolean;
  readonly fallback: string;
}

/**
 * The answer to RESOURCE_EXHAUSTED: the pet service shed the call, over its capacity for now. A
 * 503 (with `Retry-After`, as every 503), as load shedding answers (RFC 9110 section 15.6.4), not
 * grpc-gateway's 429: a 429 tells a client that it sent too much, and this client may have sent
 * one request. One instance, so the pets routes can count what was shed.
 */
export const PET_SERVICE_OVER_CAPACITY = new ApiError(503, 'service_unavailable', 'pet service is over capacity; retry later');

/**
 * The answer to an ABORTED that carries no current etag: the pet service tried the change (or
 * delete) against the pet as it found it, and other changes beat its conditional write on every
 * attempt. See {@link grpcStatusToHttp}'s ABORTED.
 */
export const PET_KEPT_CHANGING = new ApiError(503, 'service_unavailable', 'the pet kept changing while this change was tried; retry later');

/** gRPC status to HTTP, as grpc-gateway maps them but for RESOURCE_EXHAUSTED and ABORTED. Unlisted codes are 500 `internal`. */
const TABLE = new Map<Status, Translation>([
  [Status.INVALID_ARGUMENT, { status: 400, code: 'invalid_request', passMessage: true, fallback: 'invalid request' }],
  [Status.NOT_FOUND, { status: 404, code: 'not_found', passMessage: true, fallback: 'not found' }],
  [Status.ALREADY_EXISTS, { status: 409, code: 'conflict', passMessage: true, fallback: 'conflict' }],
  // The pet service's only FAILED_PRECONDITION is a change of status the table refuses.
  [Status.FAILED_PRECONDITION, { status: 409, code: 'invalid_transition', passMessage: true, fallback: 'status: this change of status is not allowed' }],
  [Status.UNAVAILABLE, { status: 503, code: 'service_unavailable', passMessage: false, fallback: 'pet service unavailable' }],
  [Status.DEADLINE_EXCEEDED, { status: 504, code: 'gateway_timeout', passMessage: false, fallback: 'pet service did not answer in time' }],
  [Status.UNAUTHENTICATED, { status: 401, code: 'unauthorized', passMessage: false, fallback: 'unauthenticated' }],
  [Status.PERMISSION_DENIED, { status: 403, code: 'forbidden', passMessage: false, fallback: 'permission denied' }],
]);

const INTERNAL: Translation = { status: 500, code: 'internal', passMessage: false, fallback: 'internal error' };

/**
 * The fields the pet service names in its google.rpc.BadRequest (proto field names, and metadata
 * keys), under the names HTTP clients know. A field absent here has the same name on both sides.
 */
const HTTP_FIELD_NAMES: ReadonlyMap<string, string> = new Map([
  ['category_id', 'categoryId'],
  ['page_token', 'cursor'],
  ['page_size', 'limit'],
  ['id', 'petId'],
  ['pet.id', 'petId'],
  ['pet.name', 'name'],
  ['pet.category_id', 'categoryId'],
  ['pet.status', 'status'],
  ['update_mask', 'body'],
  ['etag', 'If-Match'],
  [IDEMPOTENCY_KEY_METADATA, 'Idempotency-Key'],
]);

/**
 * Translates a gRPC error into the HTTP error a client sees. A message is shown only for codes
 * whose messages are meant for callers: built from the field violations in `metadata` when there
 * are some (`<HTTP field>: <description>` each, in the pet service's order, joined by `; `),
 * otherwise `details` as it came.
 */
export function grpcStatusToHttp(code: Status, details: string, metadata?: Metadata): ApiError {
  if (code === Status.RESOURCE_EXHAUSTED) return PET_SERVICE_OVER_CAPACITY;
  if (code === Status.ABORTED) return aborted(metadata);
  const translation = TABLE.get(code) ?? INTERNAL;
  return new ApiError(translation.status, translation.code, clientMessage(translation, details, metadata));
}

function clientMessage(translation: Translation, details: string, metadata: Metadata | undefined): string {
  if (!translation.passMessage) return translation.fallback;
  const violations = fieldViolationsOf(metadata);
  if (violations.length > 0) return fieldViolationsMessage(violations, (field) => HTTP_FIELD_NAMES.get(field) ?? field);
  return details === '' ? translation.fallback : details;
}

/**
 * The answer to ABORTED. With the pet's current etag (a google.rpc.ErrorInfo), it is the pet
 * service's etag mismatch (AIP-154): 412 (RFC 9110 section 13.1.1) with that ETag, so that a
 * client can tell what it holds is stale without another read. Without one, no condition of the
 * request failed (there was none, or it held on every attempt): the pet kept changing under the
 * store's conditional write. A 412 would claim a condition evaluated false (section 15.5.13), and
 * its documented ETag would be missing; gRPC's ABORTED asks for a retry at a higher level, which
 * over HTTP is 503 with `Retry-After` (the client library retries it, with the same
 * Idempotency-Key).
 */
function aborted(metadata: Metadata | undefined): ApiError {
  const etag = currentEtagOf(metadata);
  if (etag === undefined) return PET_KEPT_CHANGING;
  return new ApiError(412, 'precondition_failed', `If-Match: does not match the pet's current ETag, ${etag}`, { ETag: etag });
}
