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

/** gRPC status to HTTP, as grpc-gateway maps them but for RESOURCE_EXHAUSTED. Unlisted codes are 500 `internal`. */
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
  if (code === Status.ABORTED) return preconditionFailed(metadata);
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
 * The answer to ABORTED, the pet service's etag mismatch (AIP-154): 412 (RFC 9110 section
 * 13.1.1), with the pet's current ETag from the error's google.rpc.ErrorInfo so that a client can
 * tell what it holds is stale without another read. Without one (another ABORTED, which the pet
 * service does not send) the 412 carries no ETag.
 */
function preconditionFailed(metadata: Metadata | undefined): ApiError {
  const etag = currentEtagOf(metadata);
  return etag === undefined
    ? new ApiError(412, 'precondition_failed', 'If-Match: the pet has changed since; read it again')
    : new ApiError(412, 'precondition_failed', `If-Match: does not match the pet's current ETag, ${etag}`, { ETag: etag });
}
