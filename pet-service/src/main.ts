import {
  createLogger,
  createReportThrottle,
  createTracing,
  exitAfterStartupFailure,
  installCrashHandlers,
  listenFailure,
  logExportFailures,
  logStrayOutput,
  resolveSecretFiles,
  shutdownOnSignal,
} from '@petstore/runtime';
import type { Logger } from 'pino';
import { startAdminServer } from './observability/admin-server';
import { parseConfig, type PetServiceConfig, SECRET_VARIABLES } from './config';
import { installGrpcLibraryLog } from './grpc/grpc-library-log';
import { openServerCertificates } from './grpc/tls-settings';
import { MemoryPetRepository } from './store/memory-pet-repository';
import { createMetrics } from './observability/metrics';
import { DeferredRepository } from './store/deferred-repository';
import { MongoPetRepository } from './store/mongo-pet-repository';
import type { PetRepository } from './store/pet-repository';
import { createServer } from './server';

/** Shortest time between two log lines saying the store is not reachable yet. */
const STORE_WAIT_REPORT_MS = 60_000;

function readConfig(): PetServiceConfig {
  try {
    return parseConfig(resolveSecretFiles(process.env, SECRET_VARIABLES));
  } catch (error) {
    console.error((error as Error).message);
    process.exit(1);
  }
}

/**
 * The in-memory store, or MongoDB: once open, or, when the first attempt could not reach it, still
 * being opened in the background, while the service serves (gRPC health NOT_SERVING) meanwhile. A
 * refusal that no wait fixes ends the service.
 */
async function openRepository(config: PetServiceConfig, logger: Logger): Promise<PetRepository> {
  if (config.mongodbUri === undefined) return new MemoryPetRepository({ maxIdempotencyKeys: config.idempotencyMaxKeys });
  const settings = {
    uri: config.mongodbUri,
    database: config.mongodbDatabase,
    timeoutMs: config.mongodbTimeoutMs,
    readPreference: config.mongodbReadPreference,
    idBlockSize: config.mongodbIdBlockSize,
  };
  const report = createReportThrottle({ intervalMs: STORE_WAIT_REPORT_MS, now: () => performance.now() });
  const repository = new DeferredRepository({
    open: () => MongoPetRepository.connect(settings),
    onRetry: (error, attempts, delayMs) => {
      const level = report('store') === undefined ? 'debug' : 'warn';
      logger[level]({ attempts, delayMs, reason: error.message }, 'store not reachable yet; NOT_SERVING until it is');
    },
  });
  await repository.firstAttempt;
  return repository;
}

async function main(config: PetServiceConfig, logger: Logger): Promise<void> {
  // Before the store: a certificate that cannot be used is a configuration error, found at once.
  const tls =
    config.tls === undefined
      ? undefined
      : { certificates: openServerCertificates(config.tls, logger), requireClientCertificate: config.tls.clientCaFile !== undefined };
  const repository = await openRepository(config, logger);
  const metrics = createMetrics(repository instanceof MemoryPetRepository ? { idempotencyKeys: () => repository.idempotencyKeys } : {});
  // A queued read or create gives up while its caller's deadline still leaves the store its timeout.
  const operationTimeMs = config.mongodbUri === undefined ? 0 : config.mongodbTimeoutMs;
  const tracing = createTracing(config.tracing, { onExportFailure: logExportFailures(logger) });
  const store = config.mongodbUri === undefined ? { system: 'memory' } : { system: 'mongodb', namespace: config.mongodbDatabase };
  const server = await createServer({ ...config, operationTimeMs, repository, logger, metrics, tracer: tracing.tracer, store, tls }).catch((error: unknown) => {
    throw listenFailure(error, 'PET_SERVICE_PORT', config.port);
  });
  const admin = await startAdminServer(metrics.registry, config.host, config.adminPort, () => server.health.status('') === 'SERVING').catch(
    (error: unknown) => {
      throw listenFailure(error, config.adminPortVariable, config.adminPort);
    },
  );
  logger.info(
    {
      port: server.port,
      adminPort: admin.port,
      store: config.mongodbUri === undefined ? 'memory' : 'mongodb',
      grpcTransport: tls === undefined ? 'plaintext' : tls.requireClientCertificate ? 'mutual TLS' : 'TLS',
    },
    'pet service listening',
  );
  if (repository instanceof DeferredRepository && !repository.isOpen) {
    repository.opened.then(
      () => {
        logger.info('store opened');
        void server.storeHealth.probe();
      },
      (error: unknown) => exitAfterStartupFailure(logger, error, 'pet service failed to open its store'),
    );
  }

  // SIGTERM: health reports NOT_SERVING at once while calls are still served for
  // SHUTDOWN_DELAY_MS; then the server stops taking calls. Exit within SHUTDOWN_TIMEOUT_MS after
  // the delay whatever still hangs (calls, closing the store or the admin listener); calls
  // cancelled at the timeout make the exit code 1. The same when the process that started this
  // one over an IPC channel (`npm start`) is gone.
  shutdownOnSignal({
    logger,
    delayMs: config.shutdownDelayMs,
    timeoutMs: config.shutdownTimeoutMs,
    begin: () => server.drain(),
    drain: async () => {
      const [{ forced }] = await Promise.all([server.shutdown(), admin.close()]);
      await tracing.shutdown();
      if (forced) logger.error('cancelled calls that outlived SHUTDOWN_TIMEOUT_MS');
      return forced ? 1 : 0;
    },
    parent: process.channel === undefined ? undefined : process,
  });
}

const config = readConfig();
const logger = createLogger({ service: 'pet-service', level: config.logLevel, pretty: config.logPretty });
logStrayOutput({ console, process }, logger);
installGrpcLibraryLog();
installCrashHandlers(logger);
main(config, logger).catch((error: unknown) => exitAfterStartupFailure(logger, error, 'pet service failed to start'));
