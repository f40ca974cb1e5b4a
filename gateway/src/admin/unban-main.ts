/**
 * `npm run unban -- <keyId>`: lifts a key's temporary ban in the shared Redis store. Every replica
 * notices within a second (see BanCache). With in-memory counters there is nothing shared: use
 * `DELETE /admin/bans/<keyId>` on that gateway's admin port instead.
 */
import { parseConfig } from '../config';
import { keySubject } from '../rate-limit/rate-limit-policy';
import { connectRedis, waitUntilReady } from '../rate-limit/redis-connection';
import { RedisRateLimiter } from '../rate-limit/redis-rate-limiter';

const CONNECT_WAIT_MS = 5000;

async function main(): Promise<number> {
  const keyId = process.argv[2];
  if (keyId === undefined || process.argv.length > 3) {
    console.error('usage: npm run unban -- <keyId>');
    return 2;
  }
  let config;
  try {
    config = parseConfig(process.env, '');
  } catch (error) {
    console.error((error as Error).message);
    return 1;
  }
  if (config.redisUrl === undefined) {
    console.error('REDIS_URL is not set; with in-memory counters use DELETE /admin/bans/<keyId> on the admin port');
    return 1;
  }
  const redis = connectRedis({ url: config.redisUrl, commandTimeoutMs: config.redisCommandTimeoutMs });
  const limiter = new RedisRateLimiter({ redis, now: Date.now });
  try {
    if (!(await waitUntilReady(redis, CONNECT_WAIT_MS))) {
      console.error(`REDIS_URL: no connection within ${CONNECT_WAIT_MS} ms`);
      return 1;
    }
    const lifted = await limiter.unban(keySubject(keyId));
    console.log(lifted ? `ban lifted for key ${keyId}` : `no ban in force for key ${keyId}`);
    return 0;
  } finally {
    await limiter.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error('unban failed:', (error as Error).message);
    process.exit(1);
  },
);
