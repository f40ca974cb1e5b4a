/**
 * gRPC metadata keys the gateway and the pet service agree on, beside the messages of the
 * contract: a rename on one side only would silently drop the value.
 */
export const REQUEST_ID_METADATA = 'x-request-id';
/** The caller's idempotency key for CreatePet (the gateway's `Idempotency-Key` header). */
export const IDEMPOTENCY_KEY_METADATA = 'idempotency-key';
/** Who is calling (the gateway sends the API key's id); idempotency keys are scoped to it. */
export const CALLER_ID_METADATA = 'x-caller-id';
/** Response metadata, `true` when a create returned an earlier create's pet. */
export const IDEMPOTENT_REPLAYED_METADATA = 'idempotent-replayed';
/**
 * Trailing metadata of gRPC's rich error model: a serialized google.rpc.Status whose details say
 * more than the status line (see `field-violation.ts`).
 */
export const STATUS_DETAILS_METADATA = 'grpc-status-details-bin';
