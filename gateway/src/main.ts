import { join } from 'node:path';
import { createAdminApp } from './admin-app';
import { ApiKeyStore } from './api-keys';
import { createApp } from './app';
import { type GatewayConfig, parseConfig } from './config';
import { FallbackRateLimiter } from './fallback-rate-limiter';
import { listen } from './http-server';
import { MemoryRateLimiter } from './memory-rate-limiter';
import { createPetClient } from './pet-client';
import type { RateLimiter } from './rate-limiter';
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

const log = (event: object): void => console.log(JSON.stringify(event));

/** In-memory counters, or Redis with them as the outage fallback. Waits a bounded time for Redis. */
async function createLimiter(config: GatewayConfig): Promise<RateLimiter> {
  const memory = new MemoryRateLimiter({ now: Date.now });
  if (config.redisUrl === undefined) return memory;
  const redis = connectRedis({ url: config.redisUrl, commandTimeoutMs: config.redisCommandTimeoutMs });
  if (!(await waitUntilReady(redis, config.redisStartupWaitMs))) {
    log({ msg: 'Redis not ready at startup; serving with in-memory counters until it is', waitedMs: config.redisStartupWaitMs });
  }
  return new FallbackRateLimiter({ primary: new RedisRateLimiter({ redis, now: Date.now }), fallback: memory, log });
}

async function main(): Promise<void> {
  const { config, apiKeys } = loadSettings();
  const petClient = createPetClient({ target: config.petServiceAddress, timeoutMs: config.petServiceTimeoutMs });
  const limiter = await createLimiter(config);
  const app = createApp({
    petClient,
    apiKeys,
    limiter,
    rateLimits: {
      unauthenticatedPerMinute: config.unauthenticatedPerMinute,
      ban: { threshold: config.banThreshold, seconds: config.banSeconds },
    },
    trustProxy: config.trustProxy,
  });
  const admin = await listen(createAdminApp({ limiter }), config.adminHost, config.adminPort);
  const { server, port } = await listen(app, config.host, config.port);
  log({
    msg: 'gateway listening',
    port,
    adminPort: admin.port,
    petService: config.petServiceAddress,
    rateLimitStore: config.redisUrl === undefined ? 'memory' : 'redis',
  });

  const stop = (): void => {
    admin.server.close();
    admin.server.closeIdleConnections();
    server.close(() => {
      petClient.close();
      limiter.close().finally(() => process.exit(0));
    });
    server.closeIdleConnections();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((error: unknown) => {
  console.error('gateway failed to start:', error);
  process.exit(1);
});
