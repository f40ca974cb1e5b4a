import { Metadata } from '@grpc/grpc-js';

/**
 * gRPC metadata keys the gateway and the pet service agree on, beside the messages of the
 * contract: a rename on one side only would silently drop the value.
 */
export const REQUEST_ID_METADATA = 'x-request-id';
/** The caller's idempotency key for CreatePet (the gateway's `Idempotency-Key` header). */
export const IDEMPOTENCY_KEY_METADATA = 'idempotency-key';
/** Who is calling (the gateway sends the API key's id); idempotency keys are scoped to it. */
export const CALLER_ID_METADATA = 'x-caller-id';
/**
 * W3C Trace Context, as in HTTP: the caller's span, which the pet service's span of the call is a
 * child of, and vendor state carried along with it.
 */
export const TRACEPARENT_METADATA = 'traceparent';
export const TRACESTATE_METADATA = 'tracestate';
/** Response metadata, `true` when a create returned an earlier create's pet. */
export const IDEMPOTENT_REPLAYED_METADATA = 'idempotent-replayed';
/**
 * Trailing metadata of gRPC's rich error model: a serialized google.rpc.Status whose details say
 * more than the status line (see `field-violation.ts`).
 */
export const STATUS_DETAILS_METADATA = 'grpc-status-details-bin';
/**
 * Trailing metadata of a failed call, gRPC's standard retry pushback (gRFC A6): a negative value
 * (or one that is not an integer) says "do not retry this call", a non-negative one "retry no
 * sooner than this many milliseconds". The pet service sends `-1` when retrying would only add to
 * an overload: the store did not answer in time, or a bound refused the call.
 */
export const RETRY_PUSHBACK_METADATA = 'grpc-retry-pushback-ms';

/** What {@link callMetadata} puts in a call's metadata; each one left out is not sent. */
export interface CallMetadataValues {
  /** `x-request-id`: logged by the pet service with the call (see `REQUEST_ID_PATTERN`). */
  readonly requestId?: string;
  /** `x-caller-id`: who is calling; idempotency keys are scoped to it. */
  readonly callerId?: string;
  /** `idempotency-key`: makes a CreatePet safe to repeat (with the same request). */
  readonly idempotencyKey?: string;
  /** `traceparent`: the calling span, in W3C Trace Context's format. */
  readonly traceparent?: string;
  /** `tracestate`: vendor trace state, sent with `traceparent`. */
  readonly tracestate?: string;
}

/** The metadata of one call, built from the values the contract names. */
export function callMetadata(values: CallMetadataValues): Metadata {
  const metadata = new Metadata();
  if (values.requestId !== undefined) metadata.set(REQUEST_ID_METADATA, values.requestId);
  if (values.callerId !== undefined) metadata.set(CALLER_ID_METADATA, values.callerId);
  if (values.idempotencyKey !== undefined) metadata.set(IDEMPOTENCY_KEY_METADATA, values.idempotencyKey);
  if (values.traceparent !== undefined) metadata.set(TRACEPARENT_METADATA, values.traceparent);
  if (values.tracestate !== undefined) metadata.set(TRACESTATE_METADATA, values.tracestate);
  return metadata;
}
