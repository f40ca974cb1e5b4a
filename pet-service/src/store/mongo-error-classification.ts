/**
 * What a MongoDB driver error (or FerretDB's version of one) means to the store: a duplicate key,
 * a failover a create may be retried after, a server out of reach, or a slow server; and the
 * status callers get for each.
 */
import { status as Status } from '@grpc/grpc-js';
import {
  MongoError,
  MongoNetworkError,
  MongoNetworkTimeoutError,
  MongoOperationTimeoutError,
  MongoServerError,
  MongoServerSelectionError,
} from 'mongodb';
import { PetServiceError } from '../pets/pet-service-error';

const DUPLICATE_KEY = 11000;
// The codes a server gives while it steps down or shuts down: ShutdownInProgress,
// PrimarySteppedDown, InterruptedAtShutdown, InterruptedDueToReplStateChange, NotWritablePrimary,
// NotPrimaryNoSecondaryOk, NotPrimaryOrSecondary.
const UNAVAILABLE_SERVER_CODES = new Set([91, 189, 11600, 11602, 10107, 13435, 13436]);
// MaxTimeMSExpired, WriteConcernTimeout, ExceededTimeLimit: the server gave up on a slow operation.
const TIMEOUT_SERVER_CODES = new Set([50, 64, 262]);
const FERRETDB_TIMEOUT_MESSAGES = ['context deadline exceeded', 'sql: transaction has already been committed or rolled back'];

// Unauthorized, AuthenticationFailed.
const CREDENTIAL_CODES = new Set([13, 18]);

/**
 * Whether MongoDB refused the connection's credentials, or an operation for want of them: a
 * configuration to fix (MONGODB_URI), not an outage to wait out. FerretDB answers a command
 * without credentials with "requires authentication".
 */
export function isCredentialRefusal(error: unknown): boolean {
  for (let cause: unknown = error; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof MongoServerError && CREDENTIAL_CODES.has(Number(cause.code))) return true;
    if (/Authentication failed|requires authentication/.test(cause.message)) return true;
  }
  return false;
}

/** Whether a write failed on a unique index: an id or an idempotency key already in use. */
export function isDuplicateKey(error: unknown): boolean {
  return error instanceof MongoServerError && error.code === DUPLICATE_KEY;
}

/**
 * Whether a create that failed with `error` may succeed if sent again at once: a failover (a
 * stepdown's error codes, the RetryableWriteError label, an election that outlasted server
 * selection) or a lost connection. Not a timeout: the server is there but slow, and more load
 * would not help it. There are no transactions here, so TransientTransactionError never applies.
 */
export function isFailover(error: unknown): boolean {
  if (error instanceof MongoNetworkTimeoutError) return false;
  if (error instanceof MongoNetworkError || error instanceof MongoServerSelectionError) return true;
  if (error instanceof MongoError && error.hasErrorLabel('RetryableWriteError')) return true;
  return error instanceof MongoServerError && UNAVAILABLE_SERVER_CODES.has(Number(error.code));
}

/**
 * Whether the server could not be reached at all (no server selectable, a connection refused or
 * reset): what opens the store's fail-fast path. A timeout is not: the server is there, but slow.
 */
export function isConnectionFailure(error: unknown): boolean {
  return (
    error instanceof MongoServerSelectionError ||
    (error instanceof MongoNetworkError && !(error instanceof MongoNetworkTimeoutError))
  );
}

/**
 * Maps a driver error to the status callers get: an operation that ran out of time is
 * DEADLINE_EXCEEDED (the server is slow, and a write may yet have been applied, so it is not
 * "retry at will"), with a pushback telling clients not to retry it; a server out of reach or
 * stepping down is UNAVAILABLE; anything else stays a bug (INTERNAL).
 */
export function toStoreError(error: unknown): unknown {
  if (error instanceof PetServiceError) return error;
  if (isTimeout(error)) return PetServiceError.withoutRetry(Status.DEADLINE_EXCEEDED, 'pet store did not answer in time');
  if (
    error instanceof MongoNetworkError ||
    error instanceof MongoServerSelectionError ||
    (error instanceof MongoServerError && UNAVAILABLE_SERVER_CODES.has(Number(error.code)))
  ) {
    return new PetServiceError(Status.UNAVAILABLE, 'pet store unavailable');
  }
  return error;
}

function isTimeout(error: unknown): boolean {
  return (
    error instanceof MongoNetworkTimeoutError ||
    error instanceof MongoOperationTimeoutError ||
    (error instanceof MongoServerError && TIMEOUT_SERVER_CODES.has(Number(error.code))) ||
    // FerretDB reports an operation past its maxTimeMS as InternalError, not MaxTimeMSExpired: as
    // the deadline itself, or as the SQLite transaction the deadline rolled back.
    (error instanceof MongoServerError && error.code === 1 && FERRETDB_TIMEOUT_MESSAGES.some((text) => error.message.includes(text))) ||
    // A wait for a pooled connection, and the driver's other waits.
    (error instanceof MongoError && error.name.includes('Timeout'))
  );
}
