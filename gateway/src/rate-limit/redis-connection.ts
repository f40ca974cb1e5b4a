import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { RedisTarget } from '../config';
import { misconfiguration, singleRedisProblem } from './redis-misconfiguration';
import { reportingSentinelConnector, type SentinelErrorListener } from './sentinel-connector';

/** A client of whichever deployment the configuration names: scripts and keys behave alike on both. */
export type RedisClient = Redis | Cluster;

export interface RedisConnectionOptions {
  readonly target: RedisTarget;
  /** Longest wait for one reply before the request falls back to in-memory counters. */
  readonly commandTimeoutMs: number;
  /**
   * Told of every connection-level error (refused, authentication, a Sentinel that does not know
   * the master, a seed that is no cluster node); these repeat on every reconnection attempt.
   */
  readonly onError?: (error: Error) => void;
  /**
   * Told of the errors of the clients ioredis opens to each Sentinel, with its address (see
   * {@link reportingSentinelConnector}); not misconfigurations of the master, so apart from `onError`.
   */
  readonly onSentinelError?: SentinelErrorListener;
}

/** Longest pause between reconnection attempts, so the gateway is back on Redis soon after it is. */
const MAX_RECONNECT_DELAY_MS = 1000;

const reconnectDelay = (attempt: number): number => Math.min(attempt * 100, MAX_RECONNECT_DELAY_MS);

/**
 * A connection that never makes a request wait for Redis: connecting happens in the background,
 * commands fail at once while it is down (no offline queue) and after `commandTimeoutMs` when it
 * hangs, and reconnecting goes on forever.
 *
 * A Cluster client follows MOVED and ASK itself and keeps one connection per master. A Sentinel
 * client asks the Sentinels for the master on every (re)connection, checks the role of what it
 * reached (`enableReadyCheck`), subscribes to `+switch-master` (`failoverDetector`) so a failover
 * moves it at once rather than when the old master's socket dies, and reconnects on READONLY, the
 * answer of a master demoted under it.
 */
export function connectRedis(options: RedisConnectionOptions): RedisClient {
  const { target, commandTimeoutMs } = options;
  const common = {
    enableAutoPipelining: true,
    enableOfflineQueue: false,
    commandTimeout: commandTimeoutMs,
    maxRetriesPerRequest: 1,
    connectTimeout: Math.max(commandTimeoutMs, 1000),
  } satisfies RedisOptions;
  let client: RedisClient;
  switch (target.kind) {
    case 'standalone':
      client = new Redis(target.url, { ...common, retryStrategy: reconnectDelay });
      break;
    case 'cluster':
      client = new Cluster(
        target.nodes.map((node) => ({ host: node.host, port: node.port })),
        {
          enableAutoPipelining: true,
          enableOfflineQueue: false,
          clusterRetryStrategy: reconnectDelay,
          slotsRefreshTimeout: Math.max(commandTimeoutMs, 1000),
          // With TLS the nodes are dialled by the names they are known by, not the addresses those
          // resolve to: a managed cluster's certificates name hosts, and an address fails the check.
          ...(target.tls ? { dnsLookup: (address: string, callback: (error: null, address: string) => void) => callback(null, address) } : {}),
          redisOptions: {
            commandTimeout: commandTimeoutMs,
            maxRetriesPerRequest: 1,
            connectTimeout: common.connectTimeout,
            username: target.username,
            password: target.password,
            ...(target.tls ? { tls: {} } : {}),
          },
        },
      );
      break;
    case 'sentinel':
      client = new Redis({
        ...common,
        retryStrategy: reconnectDelay,
        sentinels: target.sentinels.map((sentinel) => ({ host: sentinel.host, port: sentinel.port })),
        name: target.masterName,
        role: 'master',
        username: target.username,
        password: target.password,
        sentinelUsername: target.sentinelUsername,
        sentinelPassword: target.sentinelPassword,
        sentinelCommandTimeout: common.connectTimeout,
        sentinelRetryStrategy: reconnectDelay,
        failoverDetector: true,
        Connector: reportingSentinelConnector(options.onSentinelError ?? (() => undefined)),
        reconnectOnError: (error) => error.message.startsWith('READONLY'),
        ...(target.tls ? { tls: {}, sentinelTLS: {}, enableTLSForSentinelMode: true } : {}),
      });
      break;
  }
  if (target.kind === 'sentinel') reconnectAfterSpuriousEnd(client as Redis);
  const onError = options.onError ?? (() => undefined);
  // Without a listener an 'error' event would crash the process; the limiter logs the outage once.
  client.on('error', onError);
  // A Cluster client reports each node's errors apart; a Sentinel client each Sentinel's.
  client.on('node error', onError);
  client.on('sentinelError', onError);
  return client;
}

/** Clients {@link closeRedis} was asked to close: their end is the one expected. */
const closedOnPurpose = new WeakSet<RedisClient>();

/**
 * Connects `client` again whenever it ends without {@link closeRedis}: ioredis (6.0.0) can end a
 * Sentinel client for good in the middle of a failover, and nothing would ever reconnect it.
 *
 * The failover detector answers `+switch-master` with `SentinelConnector.disconnect()`, which
 * clears the connector's `connecting` flag. When that message arrives while the client is
 * reconnecting and the connector is still asking a Sentinel for the master, the connector's loop
 * then throws "Connection is closed." instead of returning a stream, and `Redis#_connect` takes
 * that as final: status `end`, no `retryStrategy`. The gateway would count in memory until
 * restarted, its limits as loose as the replicas are many. Attempts back off as reconnections do.
 */
function reconnectAfterSpuriousEnd(client: Redis): void {
  let attempts = 0;
  client.on('ready', () => (attempts = 0));
  client.on('end', () => {
    if (closedOnPurpose.has(client)) return;
    attempts += 1;
    setTimeout(() => {
      if (closedOnPurpose.has(client) || client.status !== 'end') return;
      client.connect().catch(() => undefined);
    }, reconnectDelay(attempts)).unref();
  });
}

/** How the Redis deployment answered at startup. */
export type StartupState =
  | { readonly state: 'ready' }
  /** Not reachable within the wait: the gateway serves with in-memory counters until it is. */
  | { readonly state: 'unreachable' }
  /** Reachable, but unable to hold the counters until the configuration changes. */
  | { readonly state: 'misconfigured'; readonly problem: string };

/** A key no subject can have (subjects are `key:<id>` or `ip:<address>`), in its own slot. */
const PROBE_KEY = '{rl:startup-probe}';
const PROBE_LUA = "return redis.call('SET', KEYS[1], '1', 'PX', 1000)";

/**
 * Waits up to `timeoutMs` for `client` to be ready, then asks it what the limiter will ask (a
 * script that writes) and, for a single Redis, whether it is one: a Cluster node or a replica may
 * answer the probe's key and still refuse most others. Resolves early on an error that waiting
 * will not fix (a rejected password, a Sentinel that does not know the master). Never waits
 * forever: an unreachable Redis is the outage the limiter absorbs.
 */
export async function checkAtStartup(client: RedisClient, target: RedisTarget, timeoutMs: number): Promise<StartupState> {
  const readiness = await new Promise<StartupState>((resolve) => {
    if (client.status === 'ready') {
      resolve({ state: 'ready' });
      return;
    }
    const finish = (state: StartupState): void => {
      clearTimeout(timer);
      client.off('ready', onReady);
      for (const event of ['error', 'node error', 'sentinelError']) client.off(event, onError);
      resolve(state);
    };
    const onReady = (): void => finish({ state: 'ready' });
    const onError = (error: Error): void => {
      const problem = misconfiguration(error, target);
      if (problem !== undefined) finish({ state: 'misconfigured', problem });
    };
    const timer = setTimeout(() => finish({ state: 'unreachable' }), timeoutMs);
    client.on('ready', onReady);
    for (const event of ['error', 'node error', 'sentinelError']) client.on(event, onError);
  });
  if (readiness.state !== 'ready') return readiness;
  try {
    if (target.kind === 'standalone') {
      const problem = singleRedisProblem(await client.info());
      if (problem !== undefined) return { state: 'misconfigured', problem };
    }
    await client.eval(PROBE_LUA, 1, PROBE_KEY);
  } catch (error) {
    const problem = misconfiguration(error as Error, target);
    // Any other failure (a timeout, a dropped connection) is an outage, which the limiter absorbs.
    return problem === undefined ? { state: 'unreachable' } : { state: 'misconfigured', problem };
  }
  return { state: 'ready' };
}


/**
 * Ends the connection: politely when it is up, at once when it is not. The way to close a client
 * of {@link connectRedis}, which otherwise reconnects a Sentinel client that ends.
 */
export async function closeRedis(client: RedisClient): Promise<void> {
  if (client.status === 'ready') {
    closedOnPurpose.add(client);
    await client.quit();
    // QUIT ends the data connection only: a Sentinel client's `+switch-master` subscriptions would
    // stay open, and reconnect, until `disconnect()` ends them (ioredis #1362).
    if (client instanceof Redis && client.options.sentinels) client.disconnect();
    return;
  }
  disconnectRedis(client);
}

/** Ends the connection at once, for good: `disconnect()` for a client of {@link connectRedis}. */
export function disconnectRedis(client: RedisClient): void {
  closedOnPurpose.add(client);
  client.disconnect();
}
