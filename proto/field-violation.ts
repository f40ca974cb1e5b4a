import { Metadata, type status as Status } from '@grpc/grpc-js';
import { BadRequest, protobufPackage as RPC_PACKAGE } from './gen/google/rpc/error_details';
import { Status as RpcStatus } from './gen/google/rpc/status';
import { STATUS_DETAILS_METADATA } from './metadata';

/**
 * The one field of a request that an error is about, as the pet service names it: a proto field
 * name (`category_id`) or a metadata key (`idempotency-key`), and what is wrong with it. It
 * travels as a google.rpc.BadRequest, so callers never parse it out of the status message.
 */
export interface FieldViolation {
  readonly field: string;
  readonly description: string;
}

const BAD_REQUEST_TYPE_URL = `type.googleapis.com/${RPC_PACKAGE}.BadRequest`;

/**
 * Trailing metadata carrying `violation` as gRPC's rich error model does: a google.rpc.Status
 * (same code and message as the status line) holding one google.rpc.BadRequest.
 */
export function fieldViolationMetadata(code: Status, message: string, violation: FieldViolation): Metadata {
  const badRequest = Buffer.from(
    BadRequest.encode({ fieldViolations: [{ ...violation, reason: '', localizedMessage: undefined }] }).finish(),
  );
  const status = RpcStatus.encode({ code, message, details: [{ typeUrl: BAD_REQUEST_TYPE_URL, value: badRequest }] }).finish();
  const metadata = new Metadata();
  metadata.set(STATUS_DETAILS_METADATA, Buffer.from(status));
  return metadata;
}

/**
 * The first field violation in an error's trailing metadata, or undefined when there is none or
 * the details cannot be decoded (then the status line is all there is).
 */
export function fieldViolationOf(metadata: Metadata | undefined): FieldViolation | undefined {
  const bytes = metadata?.get(STATUS_DETAILS_METADATA)[0];
  if (!Buffer.isBuffer(bytes)) return undefined;
  try {
    const detail = RpcStatus.decode(bytes).details.find((any) => any.typeUrl === BAD_REQUEST_TYPE_URL);
    const violation = detail === undefined ? undefined : BadRequest.decode(detail.value).fieldViolations[0];
    return violation === undefined ? undefined : { field: violation.field, description: violation.description };
  } catch {
    return undefined;
  }
}
