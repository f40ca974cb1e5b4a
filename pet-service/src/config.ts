import {
  listenPort,
  nonNegativeInteger,
  positiveInteger,
  SERVICE_ENV,
  type ServiceSettings,
  serviceSettings,
  throwOnError,
  withFileVariants,
} from '@petstore/runtime';
import { type GrpcServerTls, GRPC_TLS_ENV, grpcServerTls } from './grpc/tls-settings';
import { cleanEnv, EnvError, makeValidator, str } from 'envalid';
import { MongoClient } from 'mongodb';

/**
 * A MongoDB connection string, or empty for the in-memory store. The driver's own parser judges
 * it (its constructor parses and connects nothing); its message never repeats the string, which
 * may hold a password.
 */
const mongodbUri = makeValidator<string>((input) => {
  if (input === '') return input;
  try {
    new MongoClient(input);
  } catch (error) {
    throw new EnvError(`not a MongoDB connection string: ${(error as Error).message}`);
  }
  return input;
});

/** The pet service's settings, read once at startup by `main.ts`. */
export interface PetServiceConfig extends ServiceSettings {
  readonly host: string;
  readonly port: number;
  /** Unset: the embedded in-memory store. */
  readonly mongodbUri: string | undefined;
  readonly mongodbDatabase: string;
  readonly mongodbTimeoutMs: number;
  /** Where ListPets and GetPet read: a MongoDB read preference mode. The write path reads the primary. */
  readonly mongodbReadPreference: MongoReadPreference;
  /** Ids each replica reserves from MongoDB at a time. */
  readonly mongodbIdBlockSize: number;
  /** Creates one replica sends to the store at once; more wait in a queue. */
  readonly maxConcurrentWrites: number;
  /** Creates that wait for a turn; one more is refused with RESOURCE_EXHAUSTED (HTTP 503). */
  readonly maxQueuedWrites: number;
  /** Reads (ListPets, GetPet) one replica sends to the store at once; more wait in a queue. */
  readonly maxConcurrentReads: number;
  /** Reads that wait for a turn; one more is refused with RESOURCE_EXHAUSTED (HTTP 503). */
  readonly maxQueuedReads: number;
  /** Idempotency keys the embedded store remembers at most; the oldest is forgotten first. */
  readonly idempotencyMaxKeys: number;
  readonly pageTokenSecret: string;
  readonly adminPort: number;
  /** The variable `adminPort` came from, which a message about the port names. */
  readonly adminPortVariable: 'ADMIN_PORT' | 'PET_SERVICE_ADMIN_PORT';
  /** Successful calls faster than this are logged at debug, the others at info; 0 logs all at info. */
  readonly slowCallMs: number;
  readonly storeHealthIntervalMs: number;
  /** Client connections are asked to reconnect at this age (see `server.ts`). */
  readonly maxConnectionAgeMs: number;
  /** TLS on the gRPC port, and whether callers must present a certificate; undefined: plaintext. */
  readonly tls: GrpcServerTls | undefined;
}

/** The secrets that may be given as a file instead (`<NAME>_FILE`; runtime's `resolveSecretFiles`). */
export const SECRET_VARIABLES = ['MONGODB_URI', 'PAGE_TOKEN_SECRET'] as const;

/**
 * LOG_SLOW_CALL_MS's default: several times a loaded replica's p99 for a page of 20, and a
 * twentieth of the gateway's deadline (docs/decisions.md, Operations).
 */
export const DEFAULT_SLOW_CALL_MS = 100;
/**
 * Default client connection age. With a client's re-resolution interval it bounds how long a new
 * replica waits for calls from clients that connected before it (docs/deploy.md, Scale-out notes): a
 * connection recycled this often costs one reconnect per client and replica.
 */
export const DEFAULT_MAX_CONNECTION_AGE_MS = 30_000;

/** The read preference modes MONGODB_READ_PREFERENCE accepts (the driver's names). */
export const MONGO_READ_PREFERENCES = ['primary', 'primaryPreferred', 'secondary', 'secondaryPreferred', 'nearest'] as const;
export type MongoReadPreference = (typeof MONGO_READ_PREFERENCES)[number];

/**
 * STORE_MAX_CONCURRENT_READS' and STORE_MAX_QUEUED_READS' defaults: room for a store that answers
 * in milliseconds, since the bound shrinks by itself on a slow one (store/concurrency-limiter.ts);
 * with them the overload benchmark kept its goodput and fast refusals on FerretDB (docs/mongodb.md).
 */
export const DEFAULT_MAX_CONCURRENT_READS = 16;
export const DEFAULT_MAX_QUEUED_READS = 16;

/**
 * MONGODB_ID_BLOCK_SIZE's default: one write to MongoDB per this many creates on a replica, and at
 * most this many ids skipped when a replica stops (int64 leaves room for that many skips).
 */
export const DEFAULT_ID_BLOCK_SIZE = 1000;

/** The variables the pet service reads, as envalid validators. */
const ENVIRONMENT_SPEC = {
  PET_SERVICE_HOST: str({ default: '0.0.0.0', desc: 'Interface the gRPC server binds' }),
  PET_SERVICE_PORT: listenPort({ default: 50051, desc: 'gRPC port; 0 picks a free one' }),
  MONGODB_URI: mongodbUri({ default: '', desc: 'MongoDB connection string; empty selects the in-memory store' }),
  MONGODB_DB: str({ default: 'petstore', desc: 'MongoDB database name' }),
  MONGODB_TIMEOUT_MS: positiveInteger({
    default: 1000,
    desc: 'Server selection, connect, write concern and per-operation time limit; below the gateway deadline so an outage is UNAVAILABLE, not a timeout',
  }),
  MONGODB_READ_PREFERENCE: str({
    default: 'primary',
    choices: MONGO_READ_PREFERENCES,
    desc: 'Where ListPets and GetPet read (docs/mongodb.md gives the staleness of each); creates always use the primary',
  }),
  MONGODB_ID_BLOCK_SIZE: positiveInteger({
    default: DEFAULT_ID_BLOCK_SIZE,
    desc: 'Ids a replica reserves at a time: one write to MongoDB per block, not per create; a stopped replica skips the rest of its block',
  }),
  STORE_MAX_CONCURRENT_WRITES: positiveInteger({
    default: 4,
    desc: 'Writes (creates, changes, deletes) sent to the store at once per replica; past what the store absorbs, more only make every write slower',
  }),
  STORE_MAX_QUEUED_WRITES: nonNegativeInteger({
    default: 16,
    desc: 'Writes (creates, changes, deletes) waiting for a turn per replica; one more is refused at once with RESOURCE_EXHAUSTED (503, Retry-After)',
  }),
  STORE_MAX_CONCURRENT_READS: positiveInteger({
    default: DEFAULT_MAX_CONCURRENT_READS,
    desc: 'Reads (ListPets, GetPet) sent to the store at once per replica; past what the store absorbs, more only make every read slower',
  }),
  STORE_MAX_QUEUED_READS: nonNegativeInteger({
    default: DEFAULT_MAX_QUEUED_READS,
    desc: 'Reads waiting for a turn per replica; one more is refused at once with RESOURCE_EXHAUSTED (503, Retry-After)',
  }),
  IDEMPOTENCY_MAX_KEYS: positiveInteger({
    default: 10_000,
    desc: 'Idempotency keys the embedded store remembers at most (the oldest goes first); MongoDB bounds them by its TTL index',
  }),
  PAGE_TOKEN_SECRET: str({
    default: 'petstore-dev-page-token-secret',
    desc: 'Key that signs page tokens; every replica must share it',
  }),
  ADMIN_PORT: listenPort({ default: 9091, desc: 'Port of /metrics and /healthz; 0 picks a free one' }),
  PET_SERVICE_ADMIN_PORT: listenPort({
    default: undefined,
    desc: 'ADMIN_PORT under a name of its own, which wins: one environment can then set both services (npm start)',
  }),
  LOG_SLOW_CALL_MS: nonNegativeInteger({
    default: DEFAULT_SLOW_CALL_MS,
    desc: 'Successful calls faster than this are logged at debug, slower ones and every failed call at info; 0 logs every call at info',
  }),
  GRPC_MAX_CONNECTION_AGE_MS: positiveInteger({
    default: DEFAULT_MAX_CONNECTION_AGE_MS,
    desc: 'Client connections are asked to reconnect at this age, so clients find replicas added since (scale-out)',
  }),
  STORE_HEALTH_INTERVAL_MS: positiveInteger({ default: 5000, desc: 'How often the store is pinged for health' }),
  ...GRPC_TLS_ENV,
  ...SERVICE_ENV,
};

/** Every environment variable the pet service reads (deployment manifests are checked against it). */
export const ENVIRONMENT_VARIABLES: readonly string[] = Object.freeze([...Object.keys(ENVIRONMENT_SPEC), ...withFileVariants(SECRET_VARIABLES), 'NODE_ENV']);

/**
 * Parses and validates the environment. Throws one Error naming every bad variable.
 * `prettyAvailable` says whether pino-pretty can be loaded (a seam for tests; default: try to load it).
 */
export function parseConfig(env: NodeJS.ProcessEnv, prettyAvailable?: () => boolean): PetServiceConfig {
  const parsed = cleanEnv(env, ENVIRONMENT_SPEC, { reporter: throwOnError });
  const shared = serviceSettings(parsed, env, 'pet-service', prettyAvailable);
  return Object.freeze({
    ...shared,
    host: parsed.PET_SERVICE_HOST,
    port: parsed.PET_SERVICE_PORT,
    mongodbUri: parsed.MONGODB_URI === '' ? undefined : parsed.MONGODB_URI,
    mongodbDatabase: parsed.MONGODB_DB,
    mongodbTimeoutMs: parsed.MONGODB_TIMEOUT_MS,
    mongodbReadPreference: parsed.MONGODB_READ_PREFERENCE as MongoReadPreference,
    mongodbIdBlockSize: parsed.MONGODB_ID_BLOCK_SIZE,
    maxConcurrentWrites: parsed.STORE_MAX_CONCURRENT_WRITES,
    maxQueuedWrites: parsed.STORE_MAX_QUEUED_WRITES,
    maxConcurrentReads: parsed.STORE_MAX_CONCURRENT_READS,
    maxQueuedReads: parsed.STORE_MAX_QUEUED_READS,
    idempotencyMaxKeys: parsed.IDEMPOTENCY_MAX_KEYS,
    pageTokenSecret: parsed.PAGE_TOKEN_SECRET,
    adminPort: parsed.PET_SERVICE_ADMIN_PORT ?? parsed.ADMIN_PORT,
    adminPortVariable: parsed.PET_SERVICE_ADMIN_PORT === undefined ? 'ADMIN_PORT' : 'PET_SERVICE_ADMIN_PORT',
    slowCallMs: parsed.LOG_SLOW_CALL_MS,
    storeHealthIntervalMs: parsed.STORE_HEALTH_INTERVAL_MS,
    maxConnectionAgeMs: parsed.GRPC_MAX_CONNECTION_AGE_MS,
    tls: grpcServerTls(parsed),
  });
}
