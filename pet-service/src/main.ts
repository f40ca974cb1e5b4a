import {
  ConfigError,
  createLogger,
  createTracing,
  flushThenExit,
  installCrashHandlers,
  logExportFailures,
  resolveSecretFiles,
  shutdownOnSignal,
} from '@petstore/runtime';
import type { Logger } from 'pino';
import { startAdminServer } from './observability/admin-server';
import { parseConfig, type PetServiceConfig, SECRET_VARIABLES } from './config';
import { openServerCertificates } from './grpc/tls-settings';
import { MemoryPetRepository } from './store/memory-pet-repository';
import { createMetrics } from './observability/metrics';
import { MongoPetRepository } from './store/mongo-pet-repository';
import type { PetRepository } from './store/pet-repository';
import { createServer } from './server';

function readConfig(): PetServiceConfig {
  try {
    return parseConfig(resolveSecretFiles(process.env, SECRET_VARIABLES));
  } catch (error) {
    console.error((error as Error).message);
    process.exit(1);
  }
}

async function openRepository(config: PetServiceConfig): Promise<PetRepository> {
  if (config.mongodbUri === undefined) return new MemoryPetRepository({ maxIdempotencyKeys: config.idempotencyMaxKeys });
  return MongoPetRepository.connect({
    uri: config.mongodbUri,
    database: config.mongodbDatabase,
    timeoutMs: config.mongodbTimeoutMs,
    readPreference: config.mongodbReadPreference,
    idBlockSize: config.mongodbIdBlockSize,
  });
}

async function main(config: PetServiceConfig, logger: Logger): Promise<void> {
  // Before the store: a certificate that cannot be used is a configuration error, found at once.
  const tls =
    config.tls === undefined
      ? undefined
      : { certificates: openServerCertificates(config.tls, logger), requireClientCertificate: config.tls.clientCaFile !== undefined };
  const repository = await openRepository(config);
  const metrics = createMetrics(repository instanceof MemoryPetRepository ? { idempotencyKeys: () => repository.idempotencyKeys } : {});
  // A queued create gives up while its caller's deadline still leaves the store its timeout.
  const writeTimeMs = config.mongodbUri === undefined ? 0 : config.mongodbTimeoutMs;
  const tracing = createTracing(config.tracing, { onExportFailure: logExportFailures(logger) });
  const store = config.mongodbUri === undefined ? { system: 'memory' } : { system: 'mongodb', namespace: config.mongodbDatabase };
  const server = await createServer({ ...config, writeTimeMs, repository, logger, metrics, tracer: tracing.tracer, store, tls });
  const admin = await startAdminServer(metrics.registry, config.host, config.adminPort, () => server.health.status('') === 'SERVING');
  logger.info(
    {
      port: server.port,
      adminPort: admin.port,
      store: config.mongodbUri === undefined ? 'memory' : 'mongodb',
      grpcTransport: tls === undefined ? 'plaintext' : tls.requireClientCertificate ? 'mutual TLS' : 'TLS',
    },
    'pet service listening',
  );

  // SIGTERM: health reports NOT_SERVING at once while calls are still served for
  // SHUTDOWN_DELAY_MS; then the server stops taking calls. Exit within SHUTDOWN_TIMEOUT_MS after
  // the delay whatever still hangs (calls, closing the store or the admin listener); calls
  // cancelled at the timeout make the exit code 1.
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
  });
}

const config = readConfig();
const logger = createLogger({ service: 'pet-service', level: config.logLevel, pretty: config.logPretty });
installCrashHandlers(logger);
main(config, logger).catch((error: unknown) => {
  if (error instanceof ConfigError) {
    // The same one line as a bad variable: what to change, not a stack.
    console.error(error.message);
    flushThenExit(logger, 1);
    return;
  }
  logger.fatal({ err: error }, 'pet service failed to start');
  flushThenExit(logger, 1);
});
