/**
 * `npm run keys -- <command>`: the API key lifecycle on the keys file (`API_KEYS_FILE`), and two
 * commands on the shared Redis store (`REDIS_URL`, `REDIS_CLUSTER_NODES` or `REDIS_SENTINELS`, as
 * the gateway reads them): `unban`, which lifts a key's temporary ban (every replica notices
 * within a second, see BanCache), and `usage`, which reads what keys have used. With in-memory
 * counters there is nothing shared: each gateway's admin port answers for itself instead
 * (`DELETE /admin/bans/<keyId>`, `GET /admin/usage`).
 */
import { resolveSecretFiles } from '@petstore/runtime';
import { type GatewayConfig, parseConfig, SECRET_VARIABLES } from '../config';
import type { ApiKey } from './api-keys';
import { readUsageReport, type UsageReport } from './key-usage';
import { keySubject } from '../rate-limit/rate-limit-policy';
import { checkAtStartup, connectRedis } from '../rate-limit/redis-connection';
import { RedisRateLimiter } from '../rate-limit/redis-rate-limiter';
import { runKeysCli } from './keys-cli';

const CONNECT_WAIT_MS = 5000;

const NO_REDIS = 'REDIS_URL is not set (nor REDIS_CLUSTER_NODES, REDIS_SENTINELS)';

/** Why the shared store cannot be used, in one line; thrown by {@link withSharedLimiter}. */
class SharedStoreError extends Error {}

/**
 * Runs `use` on a limiter over the configured Redis, as the gateway connects to it (any topology),
 * and closes it after. @throws SharedStoreError when Redis is misconfigured or unreachable.
 */
async function withSharedLimiter<T>(
  config: GatewayConfig & { redis: NonNullable<GatewayConfig['redis']> },
  use: (limiter: RedisRateLimiter) => Promise<T>,
): Promise<T> {
  const target = config.redis;
  const redis = connectRedis({ target, commandTimeoutMs: config.redisCommandTimeoutMs });
  const limiter = new RedisRateLimiter({ redis, now: Date.now });
  try {
    const startup = await checkAtStartup(redis, target, CONNECT_WAIT_MS);
    if (startup.state === 'misconfigured') throw new SharedStoreError(startup.problem);
    if (startup.state === 'unreachable') throw new SharedStoreError(`${target.variable}: no connection within ${CONNECT_WAIT_MS} ms`);
    return await use(limiter);
  } finally {
    await limiter.close();
  }
}

/** Lifts a key's ban in the shared store; what fails is thrown, for the CLI to report as its others. */
async function unban(config: GatewayConfig, keyId: string): Promise<number> {
  const { redis } = config;
  if (redis === undefined) throw new Error(`${NO_REDIS}; with in-memory counters use DELETE /admin/bans/<keyId> on the admin port`);
  const lifted = await withSharedLimiter({ ...config, redis }, (limiter) => limiter.unban(keySubject(keyId)));
  console.log(lifted ? `ban lifted for key ${keyId}` : `no ban in force for key ${keyId}`);
  return 0;
}

async function readUsage(config: GatewayConfig, keys: readonly ApiKey[]): Promise<UsageReport> {
  const { redis } = config;
  if (redis === undefined) {
    throw new Error(
      `${NO_REDIS}: with in-memory counters each gateway counts its own requests; ask each one's admin port, GET /admin/usage (or /admin/usage/<keyId>)`,
    );
  }
  const ban = { threshold: config.banThreshold, seconds: config.banSeconds };
  return withSharedLimiter({ ...config, redis }, (limiter) => readUsageReport({ limiter, keys, ban, scope: 'shared', now: Date.now }));
}

async function main(): Promise<number> {
  let config: GatewayConfig;
  try {
    config = parseConfig(resolveSecretFiles(process.env, SECRET_VARIABLES), '');
  } catch (error) {
    console.error((error as Error).message);
    return 1;
  }
  return runKeysCli(process.argv.slice(2), {
    keysFile: config.apiKeysFile === '' ? undefined : config.apiKeysFile,
    unban: (keyId) => unban(config, keyId),
    readUsage: (keys) => readUsage(config, keys),
    out: (line) => console.log(line),
    err: (line) => console.error(line),
    now: Date.now,
  });
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error('keys failed:', (error as Error).message);
    process.exit(1);
  },
);
