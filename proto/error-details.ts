import { Metadata, type status as Status } from '@grpc/grpc-js';
import { ErrorInfo, PreconditionFailure, protobufPackage as RPC_PACKAGE } from './gen/google/rpc/error_details';
import { Status as RpcStatus } from './gen/google/rpc/status';
import { PET_SERVICE_NAME, type PetStatusName, transitionProblem } from './contract';
import { STATUS_DETAILS_METADATA } from './metadata';

/**
 * The details of the pet service's refusals of a change, beside field-violation.ts's BadRequest:
 * a change of status the transition table refuses (FAILED_PRECONDITION, one
 * google.rpc.PreconditionFailure), and an etag that is not the pet's (ABORTED, one
 * google.rpc.ErrorInfo carrying the current etag, AIP-154 and AIP-193). Both services import this
 * one encoder and decoder, as they do field-violation.ts.
 */

/** The PreconditionFailure violation type of a refused change of status. */
export const STATUS_TRANSITION_VIOLATION = 'STATUS_TRANSITION';
/** The ErrorInfo reason of an etag that is not the pet's current one. */
export const ETAG_MISMATCH_REASON = 'ETAG_MISMATCH';

const PRECONDITION_FAILURE_TYPE_URL = `type.googleapis.com/${RPC_PACKAGE}.PreconditionFailure`;
const ERROR_INFO_TYPE_URL = `type.googleapis.com/${RPC_PACKAGE}.ErrorInfo`;

/** A change of status the table refuses, as the details carry it. */
export interface RefusedTransition {
  readonly from: PetStatusName;
  readonly to: PetStatusName;
}

function detailsMetadata(code: Status, message: string, typeUrl: string, value: Uint8Array): Metadata {
  const status = RpcStatus.encode({ code, message, details: [{ typeUrl, value: Buffer.from(value) }] }).finish();
  const metadata = new Metadata();
  metadata.set(STATUS_DETAILS_METADATA, Buffer.from(status));
  return metadata;
}

/**
 * Trailing metadata of a refused change of status: one PreconditionFailure violation, type
 * {@link STATUS_TRANSITION_VIOLATION}, subject `<from> -> <to>`, the description naming both.
 */
export function transitionFailureMetadata(code: Status, message: string, { from, to }: RefusedTransition): Metadata {
  const failure = PreconditionFailure.encode({
    violations: [{ type: STATUS_TRANSITION_VIOLATION, subject: `${from} -> ${to}`, description: transitionProblem(from, to) }],
  }).finish();
  return detailsMetadata(code, message, PRECONDITION_FAILURE_TYPE_URL, failure);
}

/** Trailing metadata of an etag mismatch: an ErrorInfo, reason {@link ETAG_MISMATCH_REASON}, `metadata.etag` the current etag. */
export function etagMismatchMetadata(code: Status, message: string, currentEtag: string): Metadata {
  const info = ErrorInfo.encode({ reason: ETAG_MISMATCH_REASON, domain: PET_SERVICE_NAME, metadata: { etag: currentEtag } }).finish();
  return detailsMetadata(code, message, ERROR_INFO_TYPE_URL, info);
}

function detailOf(metadata: Metadata | undefined, typeUrl: string): Buffer | undefined {
  const bytes = metadata?.get(STATUS_DETAILS_METADATA)[0];
  if (!Buffer.isBuffer(bytes)) return undefined;
  try {
    return RpcStatus.decode(bytes).details.find((any) => any.typeUrl === typeUrl)?.value;
  } catch {
    return undefined;
  }
}

const STATUSES = new Set(['available', 'pending', 'sold']);

/** The refused change of status in an error's details; undefined when there is none or it does not decode. */
export function refusedTransitionOf(metadata: Metadata | undefined): RefusedTransition | undefined {
  const value = detailOf(metadata, PRECONDITION_FAILURE_TYPE_URL);
  if (value === undefined) return undefined;
  try {
    const violation = PreconditionFailure.decode(value).violations.find((candidate) => candidate.type === STATUS_TRANSITION_VIOLATION);
    const [from, to] = violation?.subject.split(' -> ') ?? [];
    return from !== undefined && to !== undefined && STATUSES.has(from) && STATUSES.has(to) ? { from: from as PetStatusName, to: to as PetStatusName } : undefined;
  } catch {
    return undefined;
  }
}

/** The pet's current etag in an etag mismatch's details; undefined when there is none or it does not decode. */
export function currentEtagOf(metadata: Metadata | undefined): string | undefined {
  const value = detailOf(metadata, ERROR_INFO_TYPE_URL);
  if (value === undefined) return undefined;
  try {
    const info = ErrorInfo.decode(value);
    return info.reason === ETAG_MISMATCH_REASON ? info.metadata.etag : undefined;
  } catch {
    return undefined;
  }
}
