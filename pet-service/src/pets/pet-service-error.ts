import { Metadata, status as Status, type ServiceError } from '@grpc/grpc-js';
import {
  etagMismatchMetadata,
  type FieldViolation,
  fieldViolationMetadata,
  fieldViolationsMessage,
  IDEMPOTENCY_KEY_METADATA,
  type RefusedTransition,
  RETRY_PUSHBACK_METADATA,
  transitionFailureMetadata,
  transitionProblem,
} from '@petstore/proto';

/**
 * The pet service's one error type: a gRPC status code and a message safe to show callers.
 * Anything else thrown inside a handler is a bug and leaves the service as INTERNAL.
 */
export class PetServiceError extends Error {
  constructor(
    readonly code: Status,
    message: string,
    /** The request's fields at fault, sent as a google.rpc.BadRequest so no caller parses `message`. */
    readonly violations: readonly FieldViolation[] = [],
    /** Sent as the call's retry pushback (`grpc-retry-pushback-ms`); -1 tells clients not to retry. */
    readonly retryPushbackMs?: number,
    /** A refused change's details: the transition refused, or the pet's current etag. */
    readonly refusal?: { readonly transition: RefusedTransition } | { readonly currentEtag: string },
  ) {
    super(message);
    this.name = 'PetServiceError';
  }

  /**
   * A failure that a retry would make worse, not better: the store did not answer in time, or a
   * bound refused the call. Its retry pushback tells gRPC clients not to retry it (gRFC A6); the
   * caller that is told decides, with the time it has left, rather than every layer retrying.
   */
  static withoutRetry(code: Status, message: string): PetServiceError {
    return new PetServiceError(code, message, [], -1);
  }

  /** RESOURCE_EXHAUSTED from a bound on the store's operations: the service is full for now. */
  static overCapacity(message: string): PetServiceError {
    return PetServiceError.withoutRetry(Status.RESOURCE_EXHAUSTED, message);
  }

  /**
   * `field` (a proto field name, or a metadata key) is wrong. The message, `field: problem`,
   * stays readable in gRPC tools; callers read the field from the status details.
   */
  static invalidArgument(field: string, problem: string): PetServiceError {
    return PetServiceError.ofField(Status.INVALID_ARGUMENT, field, problem);
  }

  /**
   * Every field of a request that is wrong, in the order given (AIP-193: one violation per
   * invalid field, so that a caller fixes them all in one round trip). The message joins them,
   * `field: problem; field: problem`.
   */
  static invalidArguments(violations: readonly FieldViolation[]): PetServiceError {
    return new PetServiceError(Status.INVALID_ARGUMENT, fieldViolationsMessage(violations), violations);
  }

  /**
   * Runs every check, each of which may throw INVALID_ARGUMENT, and returns their results; when
   * some threw, throws one INVALID_ARGUMENT with all their violations, in the checks' order.
   */
  static allValid<T extends unknown[]>(...checks: { [K in keyof T]: () => T[K] }): T {
    const violations: FieldViolation[] = [];
    const results = checks.map((check) => {
      try {
        return check();
      } catch (error) {
        if (!(error instanceof PetServiceError) || error.code !== Status.INVALID_ARGUMENT || error.violations.length === 0) throw error;
        violations.push(...error.violations);
        return undefined;
      }
    });
    if (violations.length > 0) throw PetServiceError.invalidArguments(violations);
    return results as T;
  }

  /** The refusal every store gives for an idempotency key reused with another request. */
  static idempotencyConflict(): PetServiceError {
    return PetServiceError.ofField(Status.ALREADY_EXISTS, IDEMPOTENCY_KEY_METADATA, 'already used with a different request');
  }

  /** NOT_FOUND for the pet `id`: never stored, or deleted. */
  static notFound(id: bigint): PetServiceError {
    return new PetServiceError(Status.NOT_FOUND, `pet ${id} not found`);
  }

  /**
   * FAILED_PRECONDITION: a change of status the table refuses (proto/contract.ts), named in the
   * message (`status: cannot change from sold to available; sold is final`) and, for callers, in a
   * google.rpc.PreconditionFailure. No retry helps until the pet's status changes.
   */
  static invalidTransition(transition: RefusedTransition): PetServiceError {
    return new PetServiceError(Status.FAILED_PRECONDITION, `status: ${transitionProblem(transition.from, transition.to)}`, [], undefined, { transition });
  }

  /**
   * ABORTED (AIP-154): the pet is no longer the one the caller's etag names. The current etag
   * travels in a google.rpc.ErrorInfo, so a caller can read the pet again and redo its change.
   */
  static etagMismatch(currentEtag: string): PetServiceError {
    return new PetServiceError(Status.ABORTED, `etag: the pet has changed; its etag is now ${currentEtag}`, [], undefined, { currentEtag });
  }

  /**
   * ABORTED without a current etag: a change or delete whose condition, if it had one, held, but
   * whose conditional write other changes beat on every attempt. No condition of the caller's
   * failed, so it carries no ErrorInfo (the gateway answers 503, not 412); gRPC's ABORTED says to
   * retry at a higher level, and a retry with the same idempotency key is safe.
   */
  static keptChanging(): PetServiceError {
    return new PetServiceError(Status.ABORTED, 'pet kept changing; try again');
  }

  /** Normalises anything thrown into the error a gRPC callback takes, details in its trailers. */
  static toServiceError(error: unknown): Partial<ServiceError> {
    const known = error instanceof PetServiceError ? error : new PetServiceError(Status.INTERNAL, 'internal error');
    const { refusal } = known;
    const metadata =
      known.violations.length > 0
        ? fieldViolationMetadata(known.code, known.message, known.violations)
        : refusal === undefined
          ? new Metadata()
          : 'transition' in refusal
            ? transitionFailureMetadata(known.code, known.message, refusal.transition)
            : etagMismatchMetadata(known.code, known.message, refusal.currentEtag);
    if (known.retryPushbackMs !== undefined) metadata.set(RETRY_PUSHBACK_METADATA, String(known.retryPushbackMs));
    return { code: known.code, details: known.message, message: known.message, metadata };
  }

  private static ofField(code: Status, field: string, description: string): PetServiceError {
    return new PetServiceError(code, `${field}: ${description}`, [{ field, description }]);
  }
}
