import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { Redis } from 'ioredis';
import type { Context } from 'mocha';
import type { RedisTarget } from '../../gateway/src/config';
import { findExecutable, pendingOrRequired } from './executables';
import { findRedisServer, freePort, type RedisServer, startRedisServer } from './redis-server';
import { runToRefusal } from './service-process';
import { waitFor } from './wait-for';

const run = promisify(execFile);
const SETTLE_TIMEOUT_MS = 20_000;

/** A Redis Cluster of masters only, on loopback, for one test file. */
export interface RedisClusterServers {
  readonly nodes: readonly RedisServer[];
  /** `REDIS_CLUSTER_NODES` for it: every node, as `127.0.0.1:<port>`. */
  readonly seeds: string;
  /** Whether every node reports `cluster_state:ok` (false while one does not answer). */
  healthy(): Promise<boolean>;
  stop(): Promise<void>;
}

/** A master, its replica and three Sentinels watching them, on loopback, for one test file. */
export interface RedisSentinelServers {
  readonly master: RedisServer;
  readonly replica: RedisServer;
  readonly sentinels: readonly RedisServer[];
  /** `REDIS_SENTINELS` for them. */
  readonly sentinelList: string;
  /** `REDIS_SENTINEL_MASTER`. */
  readonly masterName: string;
  /** The port the Sentinels currently name as the master's. */
  masterPort(): Promise<number>;
  stop(): Promise<void>;
}

export interface Binaries {
  readonly server: string;
  readonly cli: string;
}

const MISSING = 'redis-server or redis-cli not found (install Debian package redis-server, or set REDIS_SERVER_BIN and REDIS_CLI_BIN)';

/** redis-server and redis-cli (Debian's redis-server package brings both), if installed. */
export function findBinaries(): Binaries | undefined {
  const server = findRedisServer();
  const cli = findExecutable('REDIS_CLI_BIN', 'redis-cli', '/usr/bin/redis-cli');
  return server === undefined || cli === undefined ? undefined : { server, cli };
}

/** The binaries, or the suite is pending (failing under REQUIRE_REDIS=1). */
function binariesOrSkip(context: Context): Binaries {
  return findBinaries() ?? pendingOrRequired(context, 'REQUIRE_REDIS', MISSING);
}

/** What the gateway's config makes of `REDIS_CLUSTER_NODES` naming every node of `cluster`, without credentials. */
export function clusterTarget(cluster: RedisClusterServers): RedisTarget {
  return {
    kind: 'cluster',
    variable: 'REDIS_CLUSTER_NODES',
    nodes: cluster.nodes.map((node) => ({ host: '127.0.0.1', port: node.port })),
    username: undefined,
    password: undefined,
    tls: false,
  };
}

/** What the gateway's config makes of `REDIS_SENTINELS` naming every Sentinel of `servers`, with the passwords they were started with. */
export function sentinelTarget(servers: RedisSentinelServers, passwords: Pick<SentinelOptions, 'dataPassword' | 'sentinelPassword'>): RedisTarget {
  return {
    kind: 'sentinel',
    variable: 'REDIS_SENTINELS',
    sentinels: servers.sentinels.map((sentinel) => ({ host: '127.0.0.1', port: sentinel.port })),
    masterName: servers.masterName,
    username: undefined,
    password: passwords.dataPassword,
    sentinelUsername: undefined,
    sentinelPassword: passwords.sentinelPassword,
    tls: false,
  };
}

/** {@link startRedisCluster} for a suite: pending without the binaries (failing under REQUIRE_REDIS=1). */
export function startRedisClusterOrSkip(context: Context, masters = 3): Promise<RedisClusterServers> {
  return startRedisCluster(binariesOrSkip(context), masters);
}

/**
 * Starts `masters` cluster-enabled servers, joins them with `redis-cli --cluster create` (the
 * slots split evenly, no replicas) and resolves once every node reports `cluster_state:ok`.
 * Throws without the binaries.
 */
export async function startRedisCluster(binaries: Binaries | undefined = findBinaries(), masters = 3): Promise<RedisClusterServers> {
  if (binaries === undefined) throw new Error(MISSING);
  const dir = mkdtempSync(join(tmpdir(), 'redis-cluster-'));
  const nodes: RedisServer[] = [];
  try {
    for (let i = 0; i < masters; i += 1) {
      // The bus port is given, not derived (port + 10000 may not exist above 55535).
      const busPort = await freePort();
      nodes.push(
        await startRedisServer(binaries.server, undefined, {
          args: ['--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${i}.conf`), '--cluster-port', String(busPort), '--dir', dir],
        }),
      );
    }
    const addresses = nodes.map((node) => `127.0.0.1:${node.port}`);
    await run(binaries.cli, ['--cluster', 'create', ...addresses, '--cluster-replicas', '0', '--cluster-yes'], { timeout: SETTLE_TIMEOUT_MS });
    const healthy = orFalse(async () => (await Promise.all(nodes.map((node) => clusterState(node.port)))).every((state) => state === 'ok'));
    await waitFor(healthy, SETTLE_TIMEOUT_MS);
    return {
      nodes,
      seeds: addresses.join(','),
      healthy,
      stop: () => stopAndRemove(nodes, dir),
    };
  } catch (error) {
    await stopAndRemove(nodes, dir);
    throw error;
  }
}

/** Stops every server and removes the directory their configuration and data are in. */
async function stopAndRemove(servers: readonly RedisServer[], dir: string): Promise<void> {
  await Promise.all(servers.map((server) => server.stop()));
  rmSync(dir, { recursive: true, force: true });
}

async function clusterState(port: number): Promise<string | undefined> {
  return withClient(port, async (client) => /^cluster_state:(\w+)/m.exec(String(await client.call('CLUSTER', 'INFO')))?.[1]);
}

/** How the Sentinel-managed servers are set up. */
export interface SentinelOptions {
  /** The Sentinels declare the master down after this long without an answer. */
  readonly downAfterMs: number;
  /** `requirepass` of the master and the replica (which also authenticates with it). */
  readonly dataPassword: string;
  /** `requirepass` of the Sentinels, which also authenticate with each other. */
  readonly sentinelPassword: string;
}

/**
 * Starts a master, a replica of it and three Sentinels (quorum 2), each kind with its own password,
 * and resolves once each Sentinel knows the replica and the two other Sentinels: before that, a
 * failover could not be agreed on.
 */
export function startRedisSentinelOrSkip(context: Context, options: SentinelOptions): Promise<RedisSentinelServers> {
  return startRedisSentinel(binariesOrSkip(context), options);
}

/** {@link startRedisSentinelOrSkip} outside a suite: throws without the binaries. */
export async function startRedisSentinel(binaries: Binaries | undefined, options: SentinelOptions): Promise<RedisSentinelServers> {
  if (binaries === undefined) throw new Error(MISSING);
  const { downAfterMs, dataPassword, sentinelPassword } = options;
  const masterName = 'petstore-limits';
  const dir = mkdtempSync(join(tmpdir(), 'redis-sentinel-'));
  const started: RedisServer[] = [];
  try {
    // The replica may become the master, and the master a replica: both get both settings.
    const data = ['--requirepass', dataPassword, '--masterauth', dataPassword, '--dir', dir];
    const master = await startRedisServer(binaries.server, undefined, { args: data });
    started.push(master);
    const replica = await startRedisServer(binaries.server, undefined, { args: [...data, '--replicaof', '127.0.0.1', String(master.port)] });
    started.push(replica);
    await waitFor(
      orFalse(async () => /^master_link_status:up/m.test(await withClient(replica.port, (client) => client.info('replication'), dataPassword))),
      SETTLE_TIMEOUT_MS,
    );
    const sentinels: RedisServer[] = [];
    for (let i = 0; i < 3; i += 1) {
      const configFile = join(dir, `sentinel-${i}.conf`);
      writeFileSync(
        configFile,
        [
          `dir ${dir}`,
          `requirepass ${sentinelPassword}`,
          `sentinel sentinel-pass ${sentinelPassword}`,
          `sentinel monitor ${masterName} 127.0.0.1 ${master.port} 2`,
          `sentinel auth-pass ${masterName} ${dataPassword}`,
          `sentinel down-after-milliseconds ${masterName} ${downAfterMs}`,
          `sentinel failover-timeout ${masterName} ${Math.max(downAfterMs * 4, 2000)}`,
          `sentinel parallel-syncs ${masterName} 1`,
          '',
        ].join('\n'),
      );
      const sentinel = await startRedisServer(binaries.server, undefined, { configFile, args: ['--sentinel'], readyText: '+monitor master' });
      sentinels.push(sentinel);
      started.push(sentinel);
    }
    await waitFor(orFalse(async () => {
      const views = await Promise.all(
        sentinels.map((sentinel) =>
          withClient(sentinel.port, async (client) => fields((await client.call('SENTINEL', 'MASTER', masterName)) as string[]), sentinelPassword),
        ),
      );
      return views.every((view) => view.get('num-other-sentinels') === '2' && view.get('num-slaves') === '1');
    }), SETTLE_TIMEOUT_MS);
    return {
      master,
      replica,
      sentinels,
      sentinelList: sentinels.map((sentinel) => `127.0.0.1:${sentinel.port}`).join(','),
      masterName,
      async masterPort() {
        const [, port] = (await withClient(
          sentinels[0]!.port,
          (client) => client.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', masterName),
          sentinelPassword,
        )) as [string, string];
        return Number(port);
      },
      stop: () => stopAndRemove(started, dir),
    };
  } catch (error) {
    await stopAndRemove(started, dir);
    throw error;
  }
}

/** A poll's condition for which an error (a server not answering yet) means "not yet". */
export function orFalse(condition: () => Promise<boolean>): () => Promise<boolean> {
  return () => condition().catch(() => false);
}

function fields(flat: readonly string[]): Map<string, string> {
  const map = new Map<string, string>();
  for (let i = 0; i + 1 < flat.length; i += 2) map.set(flat[i]!, flat[i + 1]!);
  return map;
}

/** Runs `use` on a short-lived connection to a loopback port that neither queues nor retries. */
export async function withClient<T>(port: number, use: (client: Redis) => Promise<T>, password?: string): Promise<T> {
  const client = new Redis({ port, host: '127.0.0.1', password, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await use(client);
  } finally {
    client.disconnect();
  }
}

/**
 * Starts a gateway per case, all at once, and expects each to print one line matching its pattern
 * on stderr and exit 1.
 */
export async function expectOneLineRefusals(cases: ReadonlyArray<readonly [NodeJS.ProcessEnv, RegExp]>): Promise<void> {
  const results = await Promise.all(cases.map(([env]) => runToRefusal('gateway', { PET_SERVICE_ADDR: '127.0.0.1:9', ...env })));
  for (const [index, { status, stderr }] of results.entries()) {
    const [env, pattern] = cases[index]!;
    expect(stderr.trim(), JSON.stringify(env)).to.match(pattern);
    expect(stderr.trim().split('\n'), 'one line').to.have.length(1);
    expect(status).to.equal(1);
  }
}
