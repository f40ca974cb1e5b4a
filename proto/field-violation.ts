import { Metadata, type status as Status } from '@grpc/grpc-js';
import { BadRequest, protobufPackage as RPC_PACKAGE } from './gen/google/rpc/error_details';
import { Status as RpcStatus } from './gen/google/rpc/status';
import { STATUS_DETAILS_METADATA } from './metadata';

/**
 * A field of a request that an error is about, as the pet service names it: a proto field name
 * (`category_id`) or a metadata key (`idempotency-key`), and what is wrong with it. Every invalid
 * field of a request travels in one google.rpc.BadRequest, one violation each (AIP-193), so
 * callers never parse them out of the status message.
 */
export interface FieldViolation {
  readonly field: string;
  readonly description: string;
}

/**
 * The status message of an error about `violations`: `field: description; field: description`, in
 * their order. `nameOf` gives the name a field goes by where the message is read (the gateway's
 * HTTP names); by default its own.
 */
export function fieldViolationsMessage(violations: readonly FieldViolation[], nameOf: (field: string) => string = (field) => field): string {
  return violations.map(({ field, description }) => `${nameOf(field)}: ${description}`).join('; ');
}

const BAD_REQUEST_TYPE_URL = `type.googleapis.com/${RPC_PACKAGE}.BadRequest`;

/**
 * Trailing metadata carrying `violations` as gRPC's rich error model does: a google.rpc.Status
 * (same code and message as the status line) holding one google.rpc.BadRequest with them, in order.
 */
export function fieldViolationMetadata(code: Status, message: string, violations: FieldViolation | readonly FieldViolation[]): Metadata {
  const list = Array.isArray(violations) ? violations : [violations as FieldViolation];
  const badRequest = Buffer.from(
    BadRequest.encode({ fieldViolations: list.map((violation) => ({ ...violation, reason: '', localizedMessage: undefined })) }).finish(),
  );
  const status = RpcStatus.encode({ code, message, details: [{ typeUrl: BAD_REQUEST_TYPE_URL, value: badRequest }] }).finish();
  const metadata = new Metadata();
  metadata.set(STATUS_DETAILS_METADATA, Buffer.from(status));
  return metadata;
}

/**
 * The field violations in an error's trailing metadata, in order; empty when there are none or
 * the details cannot be decoded (then the status line is all there is).
 */
export function fieldViolationsOf(metadata: Metadata | undefined): FieldViolation[] {
  const bytes = metadata?.get(STATUS_DETAILS_METADATA)[0];
  if (!Buffer.isBuffer(bytes)) return [];
  try {
    const detail = RpcStatus.decode(bytes).details.find((any) => any.typeUrl === BAD_REQUEST_TYPE_URL);
    if (detail === undefined) return [];
    return BadRequest.decode(detail.value).fieldViolations.map(({ field, description }) => ({ field, description }));
  } catch {
    return [];
  }
}

/** The first of {@link fieldViolationsOf}, or undefined. */
export function fieldViolationOf(metadata: Metadata | undefined): FieldViolation | undefined {
  return fieldViolationsOf(metadata)[0];
}
