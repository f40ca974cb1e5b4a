import { join } from 'node:path';
import type { Logger } from 'pino';
import { createAdminApp } from './admin-app';
import { ApiKeyStore } from './api-keys';
import { createApp } from './app';
import { type GatewayConfig, parseConfig } from './config';
import { installCrashHandlers } from './crash-handlers';
import { FallbackRateLimiter } from './fallback-rate-limiter';
import { closeGracefully, listen } from './http-server';
import { createLogger, flushThenExit } from './logger';
import { MemoryRateLimiter } from './memory-rate-limiter';
import { createMetrics, type GatewayMetrics } from './metrics';
import { createPetClient } from './pet-client';
import type { RateLimiter } from './rate-limiter';
import { petServiceHealthCheck, type ReadinessCheck } from './readiness';
import { connectRedis, waitUntilReady } from './redis-connection';
import { RedisRateLimiter } from './redis-rate-limiter';

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

interface Limiter {
  readonly limiter: RateLimiter;
  /** Reported by /readyz; never fails readiness (see README, Operations). */
  readonly redisCheck?: ReadinessCheck;
}

/** In-memory counters, or Redis with them as the outage fallback. Waits a bounded time for Redis. */
async function createLimiter(config: GatewayConfig, logger: Logger, metrics: GatewayMetrics): Promise<Limiter> {
  const memory = new MemoryRateLimiter({ now: Date.now });
  metrics.rateLimiterFallback.set(0);
  if (config.redisUrl === undefined) return { limiter: memory };
  const redis = connectRedis({ url: config.redisUrl, commandTimeoutMs: config.redisCommandTimeoutMs });
  if (!(await waitUntilReady(redis, config.redisStartupWaitMs))) {
    logger.warn({ waitedMs: config.redisStartupWaitMs }, 'Redis not ready at startup; serving with in-memory counters until it is');
  }
  const limiter = new FallbackRateLimiter({
    primary: new RedisRateLimiter({ redis, now: Date.now }),
    fallback: memory,
    log: ({ msg, usingFallback, error }) => {
      metrics.rateLimiterFallback.set(usingFallback ? 1 : 0);
      logger.warn({ error }, msg);
    },
  });
  return {
    limiter,
    redisCheck: async () => {
      if (redis.status !== 'ready' || limiter.usingFallback) throw new Error('degraded: counting in memory on this replica');
    },
  };
}

async function main({ config, apiKeys }: ReturnType<typeof loadSettings>, logger: Logger): Promise<void> {
  const metrics = createMetrics();
  const petClient = createPetClient({ target: config.petServiceAddress, timeoutMs: config.petServiceTimeoutMs, metrics });
  const { limiter, redisCheck } = await createLimiter(config, logger, metrics);
  let draining = false;
  const app = createApp({
    petClient,
    apiKeys,
    logger,
    metrics,
    draining: () => draining,
    limiter,
    rateLimits: {
      unauthenticatedPerMinute: config.unauthenticatedPerMinute,
      ban: { threshold: config.banThreshold, seconds: config.banSeconds },
    },
    trustProxy: config.trustProxy,
  });
  const petServiceReady = petServiceHealthCheck(petClient.channel, config.petServiceTimeoutMs);
  const admin = createAdminApp({
    registry: metrics.registry,
    readinessChecks: { petService: petServiceReady },
    reportedChecks: redisCheck === undefined ? {} : { redis: redisCheck },
    draining: () => draining,
    limiter,
    logger,
  });
  const publicServer = await listen(app, config.host, config.port);
  const adminServer = await listen(admin, config.adminHost, config.adminPort);
  logger.info(
    {
      port: publicServer.port,
      adminPort: adminServer.port,
      petService: config.petServiceAddress,
      rateLimitStore: config.redisUrl === undefined ? 'memory' : 'redis',
    },
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
      flushThenExit(logger, 1);
    }, config.shutdownTimeoutMs).unref();
    closeGracefully(publicServer.server)
      .then(async () => {
        petClient.close();
        await limiter.close();
        await closeGracefully(adminServer.server);
        logger.info('stopped');
        flushThenExit(logger, 0);
      })
      .catch((error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        flushThenExit(logger, 1);
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
  flushThenExit(logger, 1);
});
