import cluster from 'node:cluster';
import { join } from 'node:path';
import {
  ConfigError,
  createLogger,
  createTracing,
  exitAfterStartupFailure,
  flushThenExit,
  installCrashHandlers,
  listenFailure,
  logExportFailures,
  logStrayOutput,
  type ParentChannel,
  resolveSecretFiles,
  shutdownOnSignal,
  StartupError,
} from '@petstore/runtime';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import { type AdminAppOptions, createAdminApp } from './admin/admin-app';
import { type ApiKey, ApiKeyStore } from './keys/api-keys';
import { createApp } from './app';
import { answerMetricsRequests, collectWorkerMetrics } from './cluster/cluster-metrics';
import { createKeysFileReloader } from './keys/keys-file-reloader';
import { type GatewayConfig, parseConfig, SECRET_VARIABLES } from './config';
import { FallbackRateLimiter } from './rate-limit/fallback-rate-limiter';
import { closeGracefully, listen, type ListeningServer } from './http/http-server';
import { MemoryRateLimiter } from './rate-limit/memory-rate-limiter';
import { countKeyDecisions, createMetrics, type GatewayMetrics } from './observability/metrics';
import { createPetClient, type PetClient } from './pet-service-client/pet-client';
import type { RateLimiter } from './rate-limit/rate-limiter';
import { petServiceHealthCheck, type ReadinessCheck } from './pet-service-client/readiness';
import { checkAtStartup, connectRedis, disconnectRedis } from './rate-limit/redis-connection';
import { createMisconfigurationMonitor } from './rate-limit/redis-misconfiguration';
import { RedisRateLimiter } from './rate-limit/redis-rate-limiter';
import { ReplicaHeartbeat } from './rate-limit/replica-heartbeat';
import { logSentinelErrors } from './rate-limit/sentinel-connector';
import { startupFailureMessage, startWorkerPool } from './cluster/worker-pool';
import { loadRoutesFile, type ProxyRoute } from './upstream/routes-file';
import { upstreamChecks } from './upstream/upstream-readiness';

/** How long the primary waits for a worker's metrics before leaving it out of a scrape. */
const WORKER_METRICS_TIMEOUT_MS = 1000;
/** The deadline of the pet service health check each scrape makes: well within the primary's wait. */
const SCRAPE_HEALTH_CHECK_MS = WORKER_METRICS_TIMEOUT_MS / 2;
const DEMO_KEYS_FILE = join(__dirname, '..', 'config', 'demo-keys.yaml');

function loadSettings(): { config: GatewayConfig; apiKeys: ApiKeyStore; routes: readonly ProxyRoute[] } {
  try {
    const config = parseConfig(resolveSecretFiles(process.env, SECRET_VARIABLES), DEMO_KEYS_FILE);
    const routes = config.routesFile === undefined ? [] : loadRoutesFile(config.routesFile);
    return { config, apiKeys: ApiKeyStore.load(config.apiKeysFile), routes };
  } catch (error) {
    console.error((error as Error).message);
    process.exit(1);
  }
}

interface Limiter {
  readonly limiter: RateLimiter;
  /** Reported by /readyz; never fails readiness (see docs/operations.md). */
  readonly redisCheck?: ReadinessCheck;
  /** Beating, in a process that counts requests with RATE_LIMIT_FALLBACK=split: stop it before closing the limiter. */
  readonly heartbeat?: ReplicaHeartbeat;
}

/**
 * In-memory counters, or Redis with them as the outage fallback. Waits a bounded time for Redis; a
 * Redis that answers but cannot hold the counters (see redis-misconfiguration.ts) is a start-up
 * {@link ConfigError}, and at run time is logged, counted and shown by /readyz. A process that
 * `counts` requests (not the primary of GATEWAY_WORKERS) joins the heartbeat the fallback splits
 * the limits by.
 */
async function createLimiter(config: GatewayConfig, logger: Logger, counts: boolean, metrics?: GatewayMetrics): Promise<Limiter> {
  const memory = new MemoryRateLimiter({ now: Date.now, maxAddresses: config.unauthenticatedMaxAddresses });
  metrics?.countAddressBucketsWith(() => memory.addressBuckets);
  metrics?.rateLimiterFallback.set(0);
  if (config.redis === undefined) return { limiter: memory };
  const target = config.redis;
  const monitor = createMisconfigurationMonitor(target, {
    log: (problem, occurrences) => logger.error({ occurrences }, `rate limiter: limits are per replica until Redis is reconfigured: ${problem}`),
    count: () => metrics?.rateLimiterRedisMisconfigurations.inc(),
    now: () => performance.now(),
  });
  const redis = connectRedis({
    target,
    commandTimeoutMs: config.redisCommandTimeoutMs,
    onError: (error) => monitor.report(error),
    onSentinelError: logSentinelErrors(logger),
  });
  const startup = await checkAtStartup(redis, target, config.redisStartupWaitMs);
  if (startup.state === 'misconfigured') {
    disconnectRedis(redis);
    throw new ConfigError(startup.problem);
  }
  if (startup.state === 'unreachable') {
    logger.warn({ waitedMs: config.redisStartupWaitMs }, 'Redis not ready at startup; serving with in-memory counters until it is');
  }
  const primary = new RedisRateLimiter({ redis, now: Date.now });
  const heartbeat =
    config.fallbackMode === 'split'
      ? new ReplicaHeartbeat({ registry: primary, now: Date.now, initial: (config.fallbackReplicas ?? 1) * config.workers })
      : undefined;
  if (heartbeat !== undefined) metrics?.countFallbackReplicasWith(() => heartbeat.replicas);
  if (counts) heartbeat?.start();
  const limiter = new FallbackRateLimiter({
    primary,
    fallback: memory,
    deadlineMs: config.redisCommandTimeoutMs,
    ...(heartbeat === undefined ? {} : { replicas: () => heartbeat.replicas }),
    log: ({ msg, usingFallback, error }) => {
      metrics?.rateLimiterFallback.set(usingFallback ? 1 : 0);
      if (!usingFallback) monitor.clear();
      // The share of each limit this process enforces meanwhile (docs/rate-limits.md#when-redis-is-down-each-process-enforces-its-share).
      logger.warn(usingFallback ? { error, splitOver: heartbeat?.replicas ?? 1 } : {}, msg);
    },
    onError: (error) => monitor.report(error),
  });
  return {
    limiter,
    ...(counts ? { heartbeat } : {}),
    redisCheck: async () => {
      if (monitor.problem !== undefined) throw new Error(`misconfigured, counting in memory on this replica: ${monitor.problem}`);
      if (redis.status !== 'ready' || limiter.usingFallback) throw new Error('degraded: counting in memory on this replica');
    },
  };
}

type Settings = ReturnType<typeof loadSettings>;

function keysOf(store: ApiKeyStore): readonly ApiKey[] {
  return store.records.map((record) => record.key);
}

/**
 * One process serving both ports; or, as a cluster worker (GATEWAY_WORKERS > 1), the public port
 * only, with its metrics collected by the primary.
 */
async function serve({ config, apiKeys: initialKeys, routes }: Settings, logger: Logger): Promise<void> {
  const metrics = createMetrics();
  if (cluster.isWorker) answerMetricsRequests(metrics.registry);
  // Every process that serves requests follows the keys file itself; a worker gets SIGHUP from the primary.
  const apiKeys = createKeysFileReloader({ path: config.apiKeysFile, initial: initialKeys, logger, metrics });
  process.on('SIGHUP', () => apiKeys.reload('SIGHUP', true));
  const petClient = createPetClient({
    target: config.petServiceAddress,
    timeoutMs: config.petServiceTimeoutMs,
    metrics,
    tls: config.petServiceTls,
    proxy: config.petServiceProxy,
    logger,
  });
  metrics.checkPetServiceWith(petServiceHealthCheck(petClient.transport, Math.min(config.petServiceTimeoutMs, SCRAPE_HEALTH_CHECK_MS)));
  const { limiter, redisCheck, heartbeat } = await createLimiter(config, logger, true, metrics);
  const tracing = createTracing(config.tracing, { onExportFailure: logExportFailures(logger) });
  let draining = false;
  const app = createApp({
    petClient,
    apiKeys,
    logger,
    metrics,
    limiter: countKeyDecisions(limiter, metrics, config.metricsKeyIds),
    rateLimits: {
      unauthenticatedPerMinute: config.unauthenticatedPerMinute,
      ban: { threshold: config.banThreshold, seconds: config.banSeconds },
    },
    trustProxy: config.trustProxy,
    routes,
    corsOrigins: config.corsOrigins,
    tracer: tracing.tracer,
  });
  const publicServer = await listen(app, config.host, config.port, config.connectionLimits).catch((error: unknown) => {
    throw listenFailure(error, 'PORT', config.port);
  });
  let adminServer: ListeningServer | undefined;
  if (cluster.isWorker) {
    logger.info({ port: publicServer.port }, 'gateway worker serving');
  } else {
    adminServer = await listenAdmin(config, logger, publicServer.port, {
      routes,
      registry: metrics.registry,
      petClient,
      limiter: { limiter, redisCheck },
      keys: () => keysOf(apiKeys.current()),
      draining: () => draining,
    });
  }

  // SIGTERM: readiness fails at once and responses carry `Connection: close`; the listener keeps
  // serving for SHUTDOWN_DELAY_MS (endpoints take that long to stop sending), then closes to new
  // connections, in-flight requests finish, clients close, and the process exits within
  // SHUTDOWN_TIMEOUT_MS after the delay. The same when the process that started this one over an
  // IPC channel (`npm start`) is gone; a worker's channel is the primary's, which stops it itself.
  shutdownOnSignal({
    parent: cluster.isWorker ? undefined : parentChannel,
    logger,
    delayMs: config.shutdownDelayMs,
    timeoutMs: config.shutdownTimeoutMs,
    begin: () => {
      draining = true;
      publicServer.drain();
    },
    drain: async () => {
      await closeGracefully(publicServer.server);
      apiKeys.close();
      petClient.close();
      await heartbeat?.stop();
      await limiter.close();
      if (adminServer !== undefined) await closeGracefully(adminServer.server);
      await tracing.shutdown();
      return 0;
    },
  });
}

interface AdminParts {
  /** Each route's upstream is reported by /readyz, without deciding readiness. */
  readonly routes: readonly ProxyRoute[];
  readonly registry: AdminAppOptions['registry'];
  readonly petClient: PetClient;
  readonly limiter: Limiter;
  /** The keys in force, which `GET /admin/usage` reports on. */
  readonly keys: () => readonly ApiKey[];
  readonly draining: () => boolean;
  /** Readiness checks beyond the pet service's health. */
  readonly moreChecks?: AdminAppOptions['readinessChecks'];
}

/** Listens with the admin app (single process, or cluster primary) and announces the gateway. */
async function listenAdmin(config: GatewayConfig, logger: Logger, port: number, parts: AdminParts): Promise<ListeningServer> {
  const { redisCheck, limiter } = parts.limiter;
  const admin = createAdminApp({
    registry: parts.registry,
    readinessChecks: { petService: petServiceHealthCheck(parts.petClient.transport, config.petServiceTimeoutMs), ...parts.moreChecks },
    reportedChecks: { ...(redisCheck === undefined ? {} : { redis: redisCheck }), ...upstreamChecks(parts.routes) },
    draining: parts.draining,
    limiter,
    usage: {
      keys: parts.keys,
      ban: { threshold: config.banThreshold, seconds: config.banSeconds },
      scope: config.redis === undefined ? 'replica' : 'shared',
      now: Date.now,
    },
    adminToken: config.adminToken,
    logger,
  });
  const adminServer = await listen(admin, config.adminHost, config.adminPort).catch((error: unknown) => {
    throw listenFailure(error, 'ADMIN_PORT', config.adminPort);
  });
  logger.info(
    {
      port,
      adminPort: adminServer.port,
      petService: config.petServiceAddress,
      rateLimitStore: config.redis === undefined ? 'memory' : 'redis',
      ...(config.redis === undefined ? {} : { redisTopology: config.redis.kind }),
      workers: config.workers,
    },
    'gateway listening',
  );
  return adminServer;
}

/**
 * The cluster primary (GATEWAY_WORKERS > 1): it forks the workers, replaces any that die, and
 * serves the admin port itself: /metrics summed over the workers, readiness that also needs every
 * worker serving, and ban lifts and usage in the shared Redis store. It handles no public request; it passes
 * SIGHUP (reload the keys file) on to the workers.
 */
async function supervise({ config, apiKeys: initialKeys, routes }: Settings, logger: Logger): Promise<void> {
  const pool = startWorkerPool({ count: config.workers, logger });
  // Only workers that listen have their own SIGHUP handler; one still starting reads the file anyway.
  process.on('SIGHUP', () => {
    for (const worker of pool.serving()) worker.process.kill('SIGHUP');
  });
  // The keys GET /admin/usage reports on: the file is read when asked, which is rare, rather than
  // followed, so the workers stay the only processes that log and count its reloads; a file they
  // reject leaves the last good keys here too.
  let keys = initialKeys;
  const currentKeys = (): readonly ApiKey[] => {
    try {
      keys = ApiKeyStore.load(config.apiKeysFile);
    } catch {
      // Logged by the workers, which reject it as well.
    }
    return keysOf(keys);
  };
  const petClient = createPetClient({ target: config.petServiceAddress, timeoutMs: config.petServiceTimeoutMs, tls: config.petServiceTls, proxy: config.petServiceProxy, logger });
  // Awaited together, so a worker that dies while Redis is awaited is a start-up failure, not an
  // unhandled rejection.
  const [port, { limiter, redisCheck }] = await Promise.all([pool.listening, createLimiter(config, logger, false)]);
  let draining = false;
  const adminServer = await listenAdmin(config, logger, port, {
    routes,
    registry: {
      contentType: Registry.PROMETHEUS_CONTENT_TYPE,
      metrics: () => collectWorkerMetrics(pool.serving(), WORKER_METRICS_TIMEOUT_MS),
    },
    petClient,
    limiter: { limiter, redisCheck },
    keys: currentKeys,
    draining: () => draining,
    moreChecks: {
      workers: async () => {
        const serving = pool.serving().length;
        if (serving < config.workers) throw new Error(`${serving} of ${config.workers} workers serving`);
      },
    },
  });

  // SIGTERM: readiness fails, then every worker drains as a single process would (its own delay
  // included); the primary exits 0 once all have exited cleanly, and 1 otherwise. Workers still
  // alive a second after their delay and timeout are killed, so none outlives the primary. The
  // same when the process that started the primary over an IPC channel (`npm start`) is gone.
  shutdownOnSignal({
    parent: parentChannel,
    logger,
    timeoutMs: config.shutdownDelayMs + config.shutdownTimeoutMs + 1000,
    begin: () => (draining = true),
    drain: async () => {
      const clean = await pool.stop();
      petClient.close();
      await limiter.close();
      await closeGracefully(adminServer.server);
      return clean ? 0 : 1;
    },
    abandon: () => pool.kill(),
  });
}

const settings = loadSettings();
const logger = createLogger({
  service: 'gateway',
  level: settings.config.logLevel,
  pretty: settings.config.logPretty,
  worker: cluster.isWorker ? cluster.worker!.id : undefined,
});
logStrayOutput({ console, process }, logger);
installCrashHandlers(logger);
/** The channel to the process that started this one, if it gave one (`npm start` does). */
const parentChannel: ParentChannel | undefined = process.channel === undefined ? undefined : process;
const main = settings.config.workers > 1 && cluster.isPrimary ? supervise : serve;
main(settings, logger).catch((error: unknown) => {
  if (cluster.isWorker && error instanceof StartupError) {
    // The primary prints the line, once for all its workers.
    process.send!(startupFailureMessage(error), () => flushThenExit(logger, 1));
    return;
  }
  exitAfterStartupFailure(logger, error, 'gateway failed to start');
});
