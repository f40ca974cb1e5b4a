import { connect, type Socket } from 'node:net';
import { expect } from 'chai';
import type { Context } from 'mocha';
import { type RedisServer, startRedisOrSkip } from './support/redis-server';
import { startRedisClusterOrSkip, startRedisSentinelOrSkip, withClient } from './support/redis-topologies';
import { replicaSecret, type ReplicaSet, startReplicaSet } from './support/replica-set';

const BURST = 64;

interface Topology {
  readonly env: NodeJS.ProcessEnv;
  /** Every rate-limit counter key on the server(s). */
  counterKeys(): Promise<string[]>;
  stop(): Promise<void>;
}

/**
 * Opens `requests.length` connections, then writes every request in one synchronous loop, so the
 * gateway reads them in as few event-loop turns as the kernel allows: the first burst a new pod
 * meets when it joins under load. Resolves with each connection's status line's code (0 for a
 * connection that closed without an answer).
 */
async function firstBurst(port: number, requests: readonly string[]): Promise<number[]> {
  const sockets = await Promise.all(
    requests.map(
      () =>
        new Promise<Socket>((resolve, reject) => {
          const socket = connect(port, '127.0.0.1', () => resolve(socket));
          socket.once('error', reject);
        }),
    ),
  );
  const replies = sockets.map(
    (socket) =>
      new Promise<number>((resolve) => {
        let head = '';
        socket.on('data', (chunk: Buffer) => (head += chunk.toString('latin1')));
        socket.on('error', () => undefined);
        socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0)));
      }),
  );
  for (const [index, socket] of sockets.entries()) socket.write(requests[index]!);
  return Promise.all(replies);
}

function request(secret: string | undefined): string {
  const auth = secret === undefined ? '' : `Authorization: Bearer ${secret}\r\n`;
  return `GET /v1/pets?limit=1 HTTP/1.1\r\nHost: gateway\r\n${auth}Connection: close\r\n\r\n`;
}

/**
 * A gateway process in its production configuration meeting mixed traffic as its very first
 * requests: keyed, keyless and unknown keys in one burst. See
 * gateway/test/integration/rate-limit/first-burst.test.ts for the defect this guards against,
 * which ended the process within its first second.
 */
function firstBurstSuite(name: string, start: (context: Context) => Promise<Topology>, workers = 1): void {
  describe(`a fresh gateway process on ${name}${workers > 1 ? `, GATEWAY_WORKERS=${workers}` : ''}, its first requests a mixed burst`, function () {
    this.timeout(90_000);
    let topology: Topology;
    let replicas: ReplicaSet;

    before(async function () {
      topology = await start(this);
      replicas = await startReplicaSet(1, [{ id: 'burst', plan: 'business' }], {
        ...topology.env,
        GATEWAY_WORKERS: String(workers),
        REDIS_COMMAND_TIMEOUT_MS: '2000',
      });
    });
    after(async () => {
      await replicas?.stop();
      await topology?.stop();
    });

    it(`answers all ${BURST} requests without a 5xx, counts them in Redis, and lives on`, async () => {
      const gateway = replicas.gateways[0]!;
      const requests = Array.from({ length: BURST }, (_, i) =>
        request(i % 4 === 0 ? undefined : i % 4 === 1 ? 'pk_live_unknown' : replicaSecret('burst')),
      );
      const statuses = await firstBurst(gateway.port, requests);
      expect(statuses.filter((status) => status === 200)).to.have.length(BURST / 2);
      expect(statuses.filter((status) => status === 401)).to.have.length(BURST / 2);
      // And the process is still there to answer.
      expect(await firstBurst(gateway.port, [request(replicaSecret('burst'))])).to.deep.equal([200]);
      expect(gateway.child.exitCode).to.equal(null);
      const keys = await topology.counterKeys();
      expect(keys.some((key) => key.startsWith('{rl:key:burst}:minute:')), 'the key counted in Redis').to.equal(true);
      expect(keys.some((key) => key.startsWith('{rl:ip:127.0.0.1}:ip-minute:')), 'the address counted in Redis').to.equal(true);
      const lines = gateway.logs.map((line) => String(line.msg));
      expect(lines.filter((msg) => /uncaught|Redis unavailable/i.test(msg))).to.deep.equal([]);
    });
  });
}

async function standalone(context: Context): Promise<Topology> {
  const server: RedisServer = await startRedisOrSkip(context);
  return {
    env: { REDIS_URL: server.url },
    counterKeys: () => withClient(server.port, (client) => client.keys('{rl:*')),
    stop: () => server.stop(),
  };
}

firstBurstSuite('one Redis', standalone);
firstBurstSuite('one Redis', standalone, 2);

firstBurstSuite('a three-master Redis Cluster', async (context) => {
  const cluster = await startRedisClusterOrSkip(context, 3);
  return {
    env: { REDIS_CLUSTER_NODES: cluster.seeds },
    counterKeys: async () => (await Promise.all(cluster.nodes.map((node) => withClient(node.port, (client) => client.keys('{rl:*'))))).flat(),
    stop: () => cluster.stop(),
  };
});

firstBurstSuite('a Sentinel-managed Redis', async (context) => {
  const sentinel = await startRedisSentinelOrSkip(context, { downAfterMs: 5000, dataPassword: 'data-pass-2', sentinelPassword: 'sentinel-pass-2' });
  return {
    env: {
      REDIS_SENTINELS: sentinel.sentinelList,
      REDIS_SENTINEL_MASTER: sentinel.masterName,
      REDIS_PASSWORD: 'data-pass-2',
      REDIS_SENTINEL_PASSWORD: 'sentinel-pass-2',
    },
    counterKeys: async () => withClient(await sentinel.masterPort(), (client) => client.keys('{rl:*'), 'data-pass-2'),
    stop: () => sentinel.stop(),
  };
});
