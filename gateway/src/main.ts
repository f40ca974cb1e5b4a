import { join } from 'node:path';
import type { Logger } from 'pino';
import { createAdminApp } from './admin-app';
import { ApiKeyStore } from './api-keys';
import { createApp } from './app';
import { type GatewayConfig, parseConfig } from './config';
import { installCrashHandlers } from './crash-handlers';
import { closeGracefully, listen } from './http-server';
import { createLogger } from './logger';
import { createMetrics } from './metrics';
import { createPetClient } from './pet-client';
import { petServiceHealthCheck } from './readiness';

const DEMO_KEYS_FILE = join(__dirname, '..', 'config', 'demo-keys.yaml');

function loadSettings(): { config: GatewayConfig; apiKeys: ApiKeyStore } {
  try {
    const config = parseConfig(process.env, DEMO_KEYS_FILE);
    return { config, apiKeys: ApiKeyStore.load(config.apiKeysFile) };
  } catch (error) {
    console.error((error as Error).message);
    process.exit(1);
  }
}

async function main({ config, apiKeys }: ReturnType<typeof loadSettings>, logger: Logger): Promise<void> {
  const metrics = createMetrics();
  const petClient = createPetClient({ target: config.petServiceAddress, timeoutMs: config.petServiceTimeoutMs, metrics });
  let draining = false;
  const app = createApp({ petClient, apiKeys, logger, metrics, draining: () => draining });
  const admin = createAdminApp({
    registry: metrics.registry,
    readinessChecks: { petService: petServiceHealthCheck(petClient.channel, config.petServiceTimeoutMs) },
    draining: () => draining,
  });
  const publicServer = await listen(app, config.host, config.port);
  const adminServer = await listen(admin, config.host, config.adminPort);
  logger.info(
    { port: publicServer.port, adminPort: adminServer.port, petService: config.petServiceAddress },
    'gateway listening',
  );

  // SIGTERM: readiness fails first, then the listener closes to new connections, in-flight
  // requests finish, clients close, and the process exits within SHUTDOWN_TIMEOUT_MS.
  const stop = (signal: string): void => {
    if (draining) return;
    draining = true;
    logger.info({ signal }, 'shutting down');
    setTimeout(() => {
      logger.error('in-flight requests outlived SHUTDOWN_TIMEOUT_MS; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs).unref();
    closeGracefully(publicServer.server)
      .then(async () => {
        petClient.close();
        await closeGracefully(adminServer.server);
        logger.info('stopped');
        process.exit(0);
      })
      .catch((error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

const settings = loadSettings();
const logger = createLogger({ level: settings.config.logLevel, pretty: settings.config.logPretty });
installCrashHandlers(logger);
main(settings, logger).catch((error: unknown) => {
  logger.fatal({ err: error }, 'gateway failed to start');
  process.exit(1);
});
