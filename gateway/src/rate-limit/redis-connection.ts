import { Redis } from 'ioredis';

export interface RedisConnectionOptions {
  /** `redis://` or `rediss://` URL. */
  readonly url: string;
  /** Longest wait for one reply before the request falls back to in-memory counters. */
  readonly commandTimeoutMs: number;
}

/** Longest pause between reconnection attempts, so the gateway is back on Redis soon after it is. */
const MAX_RECONNECT_DELAY_MS = 1000;

/**
 * A connection that never makes a request wait for Redis: connecting happens in the background,
 * commands fail at once while it is down (no offline queue) and after `commandTimeoutMs` when it
 * hangs, and reconnecting goes on forever.
 */
export function connectRedis(options: RedisConnectionOptions): Redis {
  const redis = new Redis(options.url, {
    enableAutoPipelining: true,
    enableOfflineQueue: false,
    commandTimeout: options.commandTimeoutMs,
    maxRetriesPerRequest: 1,
    connectTimeout: Math.max(options.commandTimeoutMs, 1000),
    retryStrategy: (attempt) => Math.min(attempt * 100, MAX_RECONNECT_DELAY_MS),
  });
  // Connection errors repeat on every reconnection attempt; the limiter logs the outage once.
  redis.on('error', () => undefined);
  return redis;
}

/** Resolves true once `redis` is ready, or false after `timeoutMs`: startup never waits forever. */
export function waitUntilReady(redis: Redis, timeoutMs: number): Promise<boolean> {
  if (redis.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const onReady = (): void => {
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(() => {
      redis.off('ready', onReady);
      resolve(false);
    }, timeoutMs);
    redis.once('ready', onReady);
  });
}
