import { join } from 'node:path';
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { PET_SERVICE_NAME, PET_SERVICE_PROTO, PROTO_ROOT } from '@petstore/proto';
import { protoPath as HEALTH_PROTO } from 'grpc-health-check';
import type { Tracer } from '@opentelemetry/api';
import { NON_RECORDING_TRACER } from '@petstore/runtime';
import pino, { type Logger } from 'pino';
import { InstrumentedRepository, type StoreDescription } from './store/instrumented-repository';
import { createMetrics, type PetServiceMetrics } from './observability/metrics';
import { PageTokenCodec } from './pets/page-token';
import type { PetRepository } from './store/pet-repository';
import { withProtocMapEntryNames } from './grpc/map-entry-names';
import { withImportsDeclared } from './grpc/reflected-imports';
import { DEFAULT_MAX_CONNECTION_AGE_MS, DEFAULT_SLOW_CALL_MS } from './config';
import { servedPetServiceDefinition } from './grpc/pet-service-definition';
import { createPetServiceHandlers } from './grpc/pet-service-handlers';
import { StoreHealthMonitor } from './store/store-health';
import { createConcurrencyLimiter } from './store/concurrency-limiter';
import { listenTls, type TlsListenerOptions } from './grpc/tls-listener';
import { ObservedHealth } from './grpc/observed-health';

/** What {@link createServer} needs; everything comes from the caller, nothing from the environment. */
export interface ServerOptions {
  readonly host: string;
  /** 0 picks a free port (tests). */
  readonly port: number;
  readonly repository: PetRepository;
  readonly pageTokenSecret: string;
  readonly logger?: Logger;
  readonly metrics?: PetServiceMetrics;
  /** How often the store is pinged to keep the health status current. */
  readonly storeHealthIntervalMs?: number;
  /** Writes (CreatePet, UpdatePet, DeletePet) running at once (unset: no bound); see {@link createConcurrencyLimiter}. */
  readonly maxConcurrentWrites?: number;
  /** Writes waiting for a turn; one more is refused with RESOURCE_EXHAUSTED (unset: no bound). */
  readonly maxQueuedWrites?: number;
  /** Reads (ListPets, GetPet) running at once (unset: no bound). */
  readonly maxConcurrentReads?: number;
  /** Reads waiting for a turn; one more is refused with RESOURCE_EXHAUSTED (unset: no bound). */
  readonly maxQueuedReads?: number;
  /**
   * The longest a store operation takes (the store's timeout): a queued read or write gives up,
   * with RESOURCE_EXHAUSTED, while its caller's deadline still leaves this much (unset: 0).
   */
  readonly operationTimeMs?: number;
  /** How long {@link RunningServer.shutdown} waits for in-flight calls before cancelling them. */
  readonly shutdownTimeoutMs?: number;
  /**
   * Age at which a client connection is asked to go away (GOAWAY), after which the client
   * reconnects and resolves the service's name again. Without it a gateway that resolved a
   * headless Service once would never call the replicas an autoscaler added afterwards. Default
   * {@link DEFAULT_MAX_CONNECTION_AGE_MS}.
   */
  readonly maxConnectionAgeMs?: number;
  /** Successful calls faster than this are logged at debug, others at info (unset: 100; 0: all at info). */
  readonly slowCallMs?: number;
  /** Monotonic time in ns that calls are timed with (tests; unset: `process.hrtime.bigint`). */
  readonly clock?: () => bigint;
  /** Starts the spans of calls and store operations (unset: none recorded; ids still reach the logs). */
  readonly tracer?: Tracer;
  /** The store, as its operations' spans name it (unset: the in-process store). */
  readonly store?: StoreDescription;
  /**
   * Serve TLS with these certificates (followed as they change, and closed at shutdown), and
   * with `requireClientCertificate` accept only callers presenting a certificate signed by their
   * CA (mutual TLS). Unset: plaintext.
   */
  readonly tls?: Pick<TlsListenerOptions, 'certificates' | 'requireClientCertificate' | 'refusalLogIntervalMs' | 'now'>;
}

export interface RunningServer {
  readonly port: number;
  readonly health: ObservedHealth;
  readonly storeHealth: StoreHealthMonitor;
  /**
   * The start of a shutdown: the whole server ('') reports NOT_SERVING from now on, so the
   * orchestrator's readiness probe takes this replica out of the endpoints, while calls are still
   * served. `petstore.v1.PetService` keeps reporting the store's health until {@link shutdown}:
   * the gateway asks for it through a channel balanced over every replica, and one replica
   * leaving must not make every gateway unready.
   */
  drain(): void;
  /**
   * Reports NOT_SERVING, stops taking calls, lets in-flight calls and every store operation they
   * started finish (cancelling the calls after the shutdown timeout), then closes the repository.
   * `forced` says whether calls had to be cancelled or store operations abandoned, so that the
   * process can exit non-zero.
   */
  shutdown(): Promise<{ readonly forced: boolean }>;
}

/** How long calls on a connection asked to go away (its maximum age, a drain) get to finish. */
const CONNECTION_GRACE_MS = 30_000;

/** googleapis' error details, vendored in @petstore/proto, relative to its root. */
const ERROR_DETAILS_PROTO = join('google', 'rpc', 'error_details.proto');

/** Health reports the whole server ('') and the pet service by name. */
const HEALTH_SERVICES = ['', PET_SERVICE_NAME];

/** Starts the gRPC server with the pet service, health checking and server reflection. */
export async function createServer(options: ServerOptions): Promise<RunningServer> {
  const logger = options.logger ?? pino({ level: 'silent' });
  const metrics = options.metrics ?? createMetrics();
  const tracer = options.tracer ?? NON_RECORDING_TRACER;
  const repository = new InstrumentedRepository(options.repository, metrics, tracer, options.store);
  const forcedShutdown = new AbortController();
  const limiter = (kind: string, maxConcurrent: number | undefined, maxQueued: number | undefined) =>
    createConcurrencyLimiter({
      kind,
      maxConcurrent: maxConcurrent ?? Number.POSITIVE_INFINITY,
      maxQueued: maxQueued ?? Number.POSITIVE_INFINITY,
      operationTimeMs: options.operationTimeMs ?? 0,
    });
  const reads = limiter('read', options.maxConcurrentReads, options.maxQueuedReads);
  const writes = limiter('write', options.maxConcurrentWrites, options.maxQueuedWrites);
  metrics.watchLimiters({ reads, writes });
  const certificates = options.tls?.certificates;
  if (certificates !== undefined) metrics.readCertificatesWith(() => certificates.current);
  const server = new Server({
    'grpc.max_connection_age_ms': options.maxConnectionAgeMs ?? DEFAULT_MAX_CONNECTION_AGE_MS,
    // Calls in flight at that age get this long to finish; the gateway's deadline is 2 s.
    'grpc.max_connection_age_grace_ms': CONNECTION_GRACE_MS,
  });
  server.addService(
    servedPetServiceDefinition(),
    createPetServiceHandlers({
      repository,
      reads,
      writes,
      pageTokens: new PageTokenCodec(options.pageTokenSecret),
      logger,
      metrics,
      forcedShutdown: forcedShutdown.signal,
      slowCallMs: options.slowCallMs ?? DEFAULT_SLOW_CALL_MS,
      clock: options.clock ?? process.hrtime.bigint,
      tracer,
    }),
  );

  // NOT_SERVING until the store first answers: a replica is not ready before it can serve.
  const health = new ObservedHealth(Object.fromEntries(HEALTH_SERVICES.map((service) => [service, 'NOT_SERVING'])));
  health.addToServer(server);
  const storeHealth = new StoreHealthMonitor(repository, health, HEALTH_SERVICES, logger);

  // keepCase: reflection serves the .proto's own field names (`category_id`, as the service's
  // errors say), not proto-loader's camelCase, so `grpcurl -d '{"category_id": 1}'` works. The
  // health proto is loaded too, so that reflection lists and describes grpc.health.v1.Health, and
  // google.rpc's error details, so that grpcurl decodes the BadRequest of a field error.
  const definition = loadSync([PET_SERVICE_PROTO, HEALTH_PROTO, ERROR_DETAILS_PROTO], { includeDirs: [PROTO_ROOT], keepCase: true });
  new ReflectionService(withImportsDeclared(withProtocMapEntryNames(definition))).addToServer(server);

  const tlsListener =
    options.tls === undefined
      ? undefined
      : await listenTls(server, {
          host: options.host,
          port: options.port,
          ...options.tls,
          logger,
          countRefusal: (reason) => metrics.tlsHandshakeRefusals.inc({ reason }),
        });
  const port =
    tlsListener?.port ??
    (await new Promise<number>((resolve, reject) => {
      server.bindAsync(`${options.host}:${options.port}`, ServerCredentials.createInsecure(), (error, bound) =>
        error ? reject(error) : resolve(bound),
      );
    }));
  await storeHealth.start(options.storeHealthIntervalMs ?? 5000);

  const drain = (): void => {
    storeHealth.stop();
    health.setStatus('', 'NOT_SERVING');
    // Every client connection is asked to go away (GOAWAY: its calls finish) while the listener
    // still accepts. Clients reconnect, here if they know no other replica, and resolve the name
    // again as soon as their resolution interval allows, so they find this replica's successors
    // while it still serves, not only once it stops listening, when a client that knew no other
    // would fail its calls until it had resolved and connected.
    server.drain(`${options.host}:${port}`, CONNECTION_GRACE_MS);
  };
  return {
    port,
    health,
    storeHealth,
    drain,
    async shutdown() {
      drain();
      health.setStatus(PET_SERVICE_NAME, 'NOT_SERVING');
      tlsListener?.close();
      // A call whose client gave up (its deadline passed) is over for grpc-js while its store
      // operation still runs; closing the store under it would fail it as INTERNAL.
      const finished = new Promise<void>((resolve) => server.tryShutdown(() => resolve())).then(() => {
        if (repository.inFlight > 0) logger.info({ storeOperations: repository.inFlight }, 'calls finished; waiting for their store operations');
        return repository.idle();
      });
      let force: NodeJS.Timeout | undefined;
      const forced = await Promise.race([
        finished.then(() => false),
        new Promise<boolean>((resolve) => (force = setTimeout(() => resolve(true), options.shutdownTimeoutMs ?? 10_000))),
      ]);
      clearTimeout(force);
      if (forced) {
        logger.warn('in-flight calls or store operations outlived the shutdown timeout; cancelling them');
        forcedShutdown.abort();
        server.forceShutdown();
      }
      await repository.close();
      return { forced };
    },
  };
}
