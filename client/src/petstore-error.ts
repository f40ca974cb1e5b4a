import type { ErrorCode } from './types';

export interface PetstoreErrorFields {
  readonly code: ErrorCode;
  readonly message: string;
  /** The HTTP status; 0 when no response arrived. */
  readonly status: number;
  readonly requestId?: string;
  /** From `Retry-After`, in milliseconds, when the response had one. */
  readonly retryAfterMs?: number;
  /** For `api_key_banned`: when the ban ends (from `X-RateLimit-Reset`, else `Retry-After`). */
  readonly bannedUntil?: Date;
  /** For `precondition_failed`: the pet's current entity tag (the 412's `ETag`). */
  readonly currentEtag?: string;
  readonly cause?: unknown;
}

/**
 * The one error the client throws for a failed call, whatever failed: the gateway's Error body
 * (`code`, `message`, `status`), the request id the gateway logged it under, and for a ban its
 * end. Cancellation is not a failure: an aborted call rejects with the signal's reason
 * (`AbortError`, or `TimeoutError` for the call's timeout), as `fetch` does.
 */
export class PetstoreError extends Error {
  override readonly name = 'PetstoreError';
  readonly code: ErrorCode;
  readonly status: number;
  readonly requestId: string | undefined;
  readonly retryAfterMs: number | undefined;
  readonly bannedUntil: Date | undefined;
  /**
   * For `precondition_failed` (412, `ifMatch` named an older version of the pet): its current
   * entity tag, to read it again or to decide that the change no longer applies.
   */
  readonly currentEtag: string | undefined;

  constructor(fields: PetstoreErrorFields) {
    super(fields.message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.code = fields.code;
    this.status = fields.status;
    this.requestId = fields.requestId;
    this.retryAfterMs = fields.retryAfterMs;
    this.bannedUntil = fields.bannedUntil;
    this.currentEtag = fields.currentEtag;
  }
}
