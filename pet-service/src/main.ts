import type { Logger } from 'pino';
import { startAdminServer } from './admin-server';
import { parseConfig, type PetServiceConfig } from './config';
import { installCrashHandlers } from './crash-handlers';
import { createLogger, flushThenExit } from './logger';
import { MemoryPetRepository } from './memory-pet-repository';
import { createMetrics } from './metrics';
import { MongoPetRepository } from './mongo-pet-repository';
import type { PetRepository } from './pet-repository';
import { createServer } from './server';

function readConfig(): PetServiceConfig {
  try {
    return parseConfig(process.env);
  } catch (error) {
    console.error((error as Error).message);
    process.exit(1);
  }
}

async function openRepository(config: PetServiceConfig): Promise<PetRepository> {
  if (config.mongodbUri === undefined) return new MemoryPetRepository();
  return MongoPetRepository.connect({
    uri: config.mongodbUri,
    database: config.mongodbDatabase,
    timeoutMs: config.mongodbTimeoutMs,
  });
}

async function main(config: PetServiceConfig, logger: Logger): Promise<void> {
  const metrics = createMetrics();
  const repository = await openRepository(config);
  const server = await createServer({ ...config, repository, logger, metrics });
  const admin = await startAdminServer(metrics.registry, config.host, config.adminPort);
  logger.info(
    { port: server.port, adminPort: admin.port, store: config.mongodbUri === undefined ? 'memory' : 'mongodb' },
    'pet service listening',
  );

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    // Exit within SHUTDOWN_TIMEOUT_MS whatever still hangs (calls, closing the store or the admin
    // listener): the orchestrator's grace period assumes it, and SIGKILL follows.
    setTimeout(() => {
      logger.error('shutdown outlived SHUTDOWN_TIMEOUT_MS; exiting');
      flushThenExit(logger, 1);
    }, config.shutdownTimeoutMs).unref();
    Promise.all([server.shutdown(), admin.close()]).then(
      ([{ forced }]) => {
        if (forced) {
          logger.error('stopped after cancelling calls that outlived SHUTDOWN_TIMEOUT_MS');
          flushThenExit(logger, 1);
          return;
        }
        logger.info('stopped');
        flushThenExit(logger, 0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        flushThenExit(logger, 1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

const config = readConfig();
const logger = createLogger({ level: config.logLevel, pretty: config.logPretty });
installCrashHandlers(logger);
main(config, logger).catch((error: unknown) => {
  logger.fatal({ err: error }, 'pet service failed to start');
  flushThenExit(logger, 1);
});
