/**
 * `npm run keys -- <command>`: the API key lifecycle on the keys file (`API_KEYS_FILE`), and
 * `unban`, which lifts a key's temporary ban in the shared Redis store (`REDIS_URL`,
 * `REDIS_CLUSTER_NODES` or `REDIS_SENTINELS`, as the gateway reads them); every replica
 * notices within a second (see BanCache). With in-memory counters there is nothing shared: use
 * `DELETE /admin/bans/<keyId>` on that gateway's admin port instead. `npm run unban -- <keyId>`
 * is kept as an alias of `unban --id`.
 */
import { type GatewayConfig, parseConfig } from '../config';
import { keySubject } from '../rate-limit/rate-limit-policy';
import { checkAtStartup, connectRedis } from '../rate-limit/redis-connection';
import { RedisRateLimiter } from '../rate-limit/redis-rate-limiter';
import { runKeysCli } from './keys-cli';

const CONNECT_WAIT_MS = 5000;

async function unban(config: GatewayConfig, keyId: string): Promise<number> {
  const target = config.redis;
  if (target === undefined) {
    console.error(
      'REDIS_URL is not set (nor REDIS_CLUSTER_NODES, REDIS_SENTINELS); with in-memory counters use DELETE /admin/bans/<keyId> on the admin port',
    );
    return 1;
  }
  const redis = connectRedis({ target, commandTimeoutMs: config.redisCommandTimeoutMs });
  const limiter = new RedisRateLimiter({ redis, now: Date.now });
  try {
    const startup = await checkAtStartup(redis, target, CONNECT_WAIT_MS);
    if (startup.state === 'misconfigured') {
      console.error(startup.problem);
      return 1;
    }
    if (startup.state === 'unreachable') {
      console.error(`${target.variable}: no connection within ${CONNECT_WAIT_MS} ms`);
      return 1;
    }
    const lifted = await limiter.unban(keySubject(keyId));
    console.log(lifted ? `ban lifted for key ${keyId}` : `no ban in force for key ${keyId}`);
    return 0;
  } finally {
    await limiter.close();
  }
}

async function main(): Promise<number> {
  let config: GatewayConfig;
  try {
    config = parseConfig(process.env, '');
  } catch (error) {
    console.error((error as Error).message);
    return 1;
  }
  return runKeysCli(process.argv.slice(2), {
    keysFile: config.apiKeysFile === '' ? undefined : config.apiKeysFile,
    unban: (keyId) => unban(config, keyId),
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
