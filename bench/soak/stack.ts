/**
 * The soak's deployment on loopback: a Redis topology, one FerretDB, two pet services on it and
 * two gateways sharing the Redis and balancing over both pet services, every process its
 * production build with its image's Node flags, each on fixed ports so a restart comes back where
 * it was; and the Service's endpoints, followed by `/readyz` as a load balancer follows them.
 */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { sha256Hex } from '../../gateway/src/keys/api-keys';
import { type Endpoints, pollEndpoints } from '../../system-test/support/endpoints';
import { findFerretDb, type MongoServer, startFerretDb } from '../../system-test/support/mongo-server';
import { findRedisServer, freePort, type RedisServer, startRedisServer } from '../../system-test/support/redis-server';
import { findBinaries, type RedisClusterServers, type RedisSentinelServers, startRedisCluster, startRedisSentinel } from '../../system-test/support/redis-topologies';
import { type ServiceProcess, startService } from '../../system-test/support/service-process';
import { waitFor } from '../../system-test/support/wait-for';
import { PET_SERVICE_NODE_FLAGS } from '../list-pets-load';

export type Topology = 'standalone' | 'cluster' | 'sentinel';

/** A key of the soak's keys file; its secret is `soak-secret-<id>`. */
export interface SoakKey {
  readonly id: string;
  readonly plan: 'free' | 'pro' | 'business' | 'enterprise';
  readonly limits?: { readonly perMinute: number; readonly perDay: number };
}

export const secretOf = (keyId: string): string => `soak-secret-${keyId}`;

/** The gateway image's Node flags (gateway/Dockerfile); startService adds `--enable-source-maps`. */
const GATEWAY_NODE_FLAGS = ['--max-semi-space-size=4', '--max-old-space-size=64'];
/** Longer than endpoint propagation (the poll below), as docs/deploy.md asks of a cluster. */
const SHUTDOWN_DELAY_MS = 1000;
const ENDPOINTS_POLL_MS = 100;
const SENTINEL_DATA_PASSWORD = 'soak-data-password';
const SENTINEL_PASSWORD = 'soak-sentinel-password';
/** The Sentinel-managed data servers, by the role each started in. */
const DATA_SERVER_NAMES = ['redis-first-master', 'redis-first-replica'] as const;

/** The Redis fault the soak injects, as the topology has it. */
export interface RedisFault {
  /** What is killed, for the report. */
  readonly describe: string;
  /** SIGKILLs it; resolves with the name of the process killed (see {@link Monitored}). */
  kill(): Promise<string>;
  /** Brings it back; resolves once the topology serves all its slots or its master again. */
  restore(): Promise<void>;
}

/** A process of the stack, for the RSS samples. */
export interface Monitored {
  readonly name: string;
  /**
   * `service`: ours, whose RSS the soak holds flat; `store`: FerretDB or Redis, whose memory grows
   * with the data the run writes (a database's cache), so it is reported, not judged.
   */
  readonly kind: 'service' | 'store';
  /** Its current process id; undefined while it is down. */
  pid(): number | undefined;
  /** Whether it was restarted during the run (its figures then span two processes). */
  restarted: boolean;
}

export interface SoakStack {
  readonly topology: Topology;
  readonly gatewayUrls: readonly string[];
  readonly endpoints: Endpoints;
  readonly redisFault: RedisFault;
  readonly monitored: readonly Monitored[];
  /** Every log line of every gateway process so far, restarted ones included. */
  gatewayLogs(): ReadonlyArray<Record<string, unknown>>;
  /** Every log line of every pet service process so far, restarted ones included. */
  petServiceLogs(): ReadonlyArray<Record<string, unknown>>;
  /** Writes the keys file anew (atomically, as `npm run keys` does) with `keys`. */
  writeKeys(keys: readonly SoakKey[]): void;
  /** SIGTERM to pet service `index`, which must exit 0, then the same process again on its ports. */
  restartPetService(index: number): Promise<void>;
  /**
   * SIGTERM to gateway `index`: the endpoints drop it when its `/readyz` fails; it must exit 0; a
   * new process on its ports rejoins them once ready.
   */
  restartGateway(index: number): Promise<void>;
  stop(): Promise<void>;
}

interface Ports {
  readonly port: number;
  readonly adminPort: number;
}

async function freePorts(count: number): Promise<Ports[]> {
  const ports: Ports[] = [];
  for (let i = 0; i < count; i += 1) ports.push({ port: await freePort(), adminPort: await freePort() });
  return ports;
}

/** Starts the whole stack; a failure stops what was started before it is thrown. */
export async function startSoakStack(topology: Topology, keys: readonly SoakKey[]): Promise<SoakStack> {
  const cleanups: Array<() => Promise<void>> = [];
  const stopAll = async (): Promise<void> => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  };
  try {
    const dir = mkdtempSync(join(tmpdir(), 'petstore-soak-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const keysFile = join(dir, 'keys.yaml');
    const writeKeys = (current: readonly SoakKey[]): void => {
      const next = `${keysFile}.next`;
      writeFileSync(next, stringify({ keys: current.map((key) => ({ ...key, sha256: sha256Hex(secretOf(key.id)) })) }));
      renameSync(next, keysFile);
    };
    writeKeys(keys);

    const redis = await startRedis(topology);
    cleanups.push(() => redis.stop());
    const ferretDb = findFerretDb();
    if (ferretDb === undefined) throw new Error('ferretdb not found (run .ci/install-ferretdb.sh or set FERRETDB_BIN)');
    const mongo: MongoServer = await startFerretDb(ferretDb);
    cleanups.push(() => mongo.close());
    const database = mongo.freshDatabase();

    const petPorts = await freePorts(2);
    const gatewayPorts = await freePorts(2);
    const common = { LOG_LEVEL: 'info', SHUTDOWN_DELAY_MS: String(SHUTDOWN_DELAY_MS), SHUTDOWN_TIMEOUT_MS: '10000' };
    const startPet = (index: number): Promise<ServiceProcess> =>
      startService(
        'pet-service',
        {
          ...common,
          PET_SERVICE_HOST: '127.0.0.1',
          PET_SERVICE_PORT: String(petPorts[index]!.port),
          ADMIN_PORT: String(petPorts[index]!.adminPort),
          MONGODB_URI: mongo.uri,
          MONGODB_DB: database,
          PAGE_TOKEN_SECRET: 'soak-page-token-secret',
        },
        { compiled: true, nodeFlags: PET_SERVICE_NODE_FLAGS },
      );
    const startGateway = (index: number): Promise<ServiceProcess> =>
      startService(
        'gateway',
        {
          ...common,
          ...redis.env,
          HOST: '127.0.0.1',
          PORT: String(gatewayPorts[index]!.port),
          ADMIN_PORT: String(gatewayPorts[index]!.adminPort),
          API_KEYS_FILE: keysFile,
          PET_SERVICE_ADDR: `ipv4:${petPorts.map(({ port }) => `127.0.0.1:${port}`).join(',')}`,
        },
        { compiled: true, nodeFlags: GATEWAY_NODE_FLAGS },
      );

    const pets: ServiceProcess[] = [];
    const gateways: ServiceProcess[] = [];
    const retiredGatewayLogs: Array<Record<string, unknown>> = [];
    const retiredPetLogs: Array<Record<string, unknown>> = [];
    cleanups.push(async () => {
      await Promise.all(gateways.map((gateway) => gateway.stop()));
      await Promise.all(pets.map((pet) => pet.stop()));
    });
    for (const index of [0, 1]) pets.push(await startPet(index));
    for (const index of [0, 1]) gateways.push(await startGateway(index));
    const endpoints = pollEndpoints(() => gatewayPorts.map(({ adminPort }) => adminPort), { pollMs: ENDPOINTS_POLL_MS });
    cleanups.push(() => endpoints.stop());
    await Promise.all([0, 1].map((index) => endpoints.becameReady(index, 30_000)));

    const monitored: Monitored[] = [
      ...[0, 1].map((index) => ({ name: `gateway-${index}`, kind: 'service' as const, pid: () => gateways[index]!.child.pid, restarted: false })),
      ...[0, 1].map((index) => ({ name: `pet-service-${index}`, kind: 'service' as const, pid: () => pets[index]!.child.pid, restarted: false })),
      { name: 'ferretdb', kind: 'store', pid: () => mongo.pid, restarted: false },
      ...redis.monitored,
    ];
    const markRestarted = (name: string): void => {
      const entry = monitored.find((candidate) => candidate.name === name);
      if (entry !== undefined) entry.restarted = true;
    };

    return {
      topology,
      gatewayUrls: gatewayPorts.map(({ port }) => `http://127.0.0.1:${port}`),
      endpoints,
      redisFault: {
        describe: redis.fault.describe,
        kill: async () => {
          const name = await redis.fault.kill();
          markRestarted(name);
          return name;
        },
        restore: () => redis.fault.restore(),
      },
      monitored,
      gatewayLogs: () => [...retiredGatewayLogs, ...gateways.flatMap((gateway) => gateway.logs)],
      petServiceLogs: () => [...retiredPetLogs, ...pets.flatMap((pet) => pet.logs)],
      writeKeys,
      async restartPetService(index) {
        markRestarted(`pet-service-${index}`);
        const old = pets[index]!;
        const code = await old.stop('SIGTERM');
        retiredPetLogs.push(...old.logs);
        if (code !== 0) throw new Error(`pet service ${index} exited ${code} on SIGTERM`);
        pets[index] = await startPet(index);
      },
      async restartGateway(index) {
        markRestarted(`gateway-${index}`);
        const old = gateways[index]!;
        const code = await old.stop('SIGTERM');
        retiredGatewayLogs.push(...old.logs);
        if (code !== 0) throw new Error(`gateway ${index} exited ${code} on SIGTERM`);
        gateways[index] = await startGateway(index);
        await endpoints.becameReady(index, 30_000);
      },
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

interface StartedRedis {
  /** The gateways' settings for it. */
  readonly env: NodeJS.ProcessEnv;
  readonly monitored: readonly Monitored[];
  readonly fault: { readonly describe: string; kill(): Promise<string>; restore(): Promise<void> };
  stop(): Promise<void>;
}

async function startRedis(topology: Topology): Promise<StartedRedis> {
  switch (topology) {
    case 'standalone': {
      const binary = findRedisServer();
      if (binary === undefined) throw new Error('redis-server not found (install Debian package redis-server)');
      const server = await startRedisServer(binary);
      return {
        env: { REDIS_URL: server.url },
        monitored: [redisProcess('redis', server)],
        fault: {
          describe: 'redis-server SIGKILLed, then started again empty on its port',
          kill: async () => {
            await server.stop('SIGKILL');
            return 'redis';
          },
          restore: () => server.restart(),
        },
        stop: () => server.stop(),
      };
    }
    case 'cluster': {
      const cluster: RedisClusterServers = await startRedisCluster(findBinaries(), 3);
      const victim = cluster.nodes[1]!;
      return {
        env: { REDIS_CLUSTER_NODES: cluster.seeds },
        monitored: cluster.nodes.map((node, index) => redisProcess(`redis-${index}`, node)),
        fault: {
          describe: 'one of the three Cluster masters SIGKILLed, then started again empty on its port (it keeps its node configuration)',
          kill: async () => {
            await victim.stop('SIGKILL');
            return 'redis-1';
          },
          restore: async () => {
            await victim.restart();
            await waitFor(() => cluster.healthy(), 30_000, () => 'the Cluster did not report cluster_state:ok');
          },
        },
        stop: () => cluster.stop(),
      };
    }
    case 'sentinel': {
      const servers: RedisSentinelServers = await startRedisSentinel(findBinaries(), {
        downAfterMs: 1000,
        dataPassword: SENTINEL_DATA_PASSWORD,
        sentinelPassword: SENTINEL_PASSWORD,
      });
      const dataServers = [servers.master, servers.replica];
      let killed: RedisServer | undefined;
      return {
        env: {
          REDIS_SENTINELS: servers.sentinelList,
          REDIS_SENTINEL_MASTER: servers.masterName,
          REDIS_PASSWORD: SENTINEL_DATA_PASSWORD,
          REDIS_SENTINEL_PASSWORD: SENTINEL_PASSWORD,
        },
        monitored: dataServers.map((server, index) => redisProcess(DATA_SERVER_NAMES[index]!, server)),
        fault: {
          describe: 'the Sentinel-managed master SIGKILLed (the Sentinels fail over to the replica), then started again, to rejoin as a replica',
          kill: async () => {
            const masterPort = await servers.masterPort();
            const index = dataServers.findIndex((server) => server.port === masterPort);
            killed = dataServers[index];
            if (killed === undefined) throw new Error(`no data server on the master's port ${masterPort}`);
            await killed.stop('SIGKILL');
            await waitFor(async () => (await servers.masterPort().catch(() => masterPort)) !== masterPort, 30_000, () => 'no failover');
            return DATA_SERVER_NAMES[index]!;
          },
          restore: async () => {
            await killed?.restart();
          },
        },
        stop: () => servers.stop(),
      };
    }
  }
}

function redisProcess(name: string, server: RedisServer): Monitored {
  return { name, kind: 'store', pid: () => server.pid, restarted: false };
}
