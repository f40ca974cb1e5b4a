import { Metadata, type ServiceError, status as Status } from '@grpc/grpc-js';

/**
 * A failed call's error, shaped as grpc-js's generated clients make it (`callErrorFromStatus`): an
 * Error whose message is `<code> <NAME>: <details>`, with the status's `code`, `details` and
 * `metadata` (the trailers, or the headers of a trailers-only answer). Callers written for grpc-js
 * read it unchanged.
 */
export function callError(code: Status, details: string, metadata: Metadata = new Metadata()): ServiceError {
  return Object.assign(new Error(`${code} ${Status[code]}: ${details}`), { code, details, metadata });
}

/** The details of a call cancelled through its signal, as grpc-js's own `cancel()` gives them. */
export const CANCELLED_ON_CLIENT = 'Cancelled on client';

/** What a call cancelled through its signal rejects with. */
export function cancelledError(): ServiceError {
  return callError(Status.CANCELLED, CANCELLED_ON_CLIENT);
}

/** `error` as text for a status's details: never throws, whatever was thrown. */
export function describe(error: unknown): string {
  try {
    return String(error);
  } catch {
    return 'an error that cannot be printed';
  }
}
