import { Metadata, status as Status, type ServiceError } from '@grpc/grpc-js';

/**
 * The pet service's one error type: a gRPC status code and a message safe to show callers.
 * Anything else thrown inside a handler is a bug and leaves the service as INTERNAL.
 */
export class PetServiceError extends Error {
  constructor(
    readonly code: Status,
    message: string,
  ) {
    super(message);
    this.name = 'PetServiceError';
  }

  static invalidArgument(field: string, problem: string): PetServiceError {
    return new PetServiceError(Status.INVALID_ARGUMENT, `${field}: ${problem}`);
  }

  /** The refusal every store gives for an idempotency key reused with another request. */
  static idempotencyConflict(): PetServiceError {
    return new PetServiceError(Status.ALREADY_EXISTS, 'idempotency-key: already used with a different request');
  }

  /** Normalises anything thrown into the error a gRPC callback takes. */
  static toServiceError(error: unknown): Partial<ServiceError> {
    const known = error instanceof PetServiceError ? error : new PetServiceError(Status.INTERNAL, 'internal error');
    return { code: known.code, details: known.message, message: known.message, metadata: new Metadata() };
  }
}
