import { expect } from 'chai';
import { runKeysCli } from './support/keys-cli';
import { fetchWithinContract } from './support/openapi-validator';
import { type RedisClusterServers, expectOneLineRefusals, startRedisClusterOrSkip, withClient } from './support/redis-topologies';
import { burstWithinOneMinute, replicaSecret, type ReplicaSet, startReplicaSet } from './support/replica-set';
import { waitFor } from './support/wait-for';

const CANDIDATE_KEYS = Array.from({ length: 60 }, (_, i) => `cluster-${i}`);

describe('three gateway processes on a three-master Redis Cluster (REDIS_CLUSTER_NODES)', function () {
  this.timeout(120_000);
  let cluster: RedisClusterServers;
  let replicas: ReplicaSet;
  /** For each master, in order, free-plan keys whose counters it holds. */
  let keysByNode: string[][];

  before(async function () {
    cluster = await startRedisClusterOrSkip(this, 3);
    keysByNode = await keysPerNode(cluster, CANDIDATE_KEYS);
    replicas = await startReplicaSet(
      3,
      CANDIDATE_KEYS.map((id) => ({ id, plan: 'free' })),
      // Exactness is the subject, not the fallback: a reply slowed past 200 ms by a loaded machine
      // would count that request in memory instead.
      { REDIS_CLUSTER_NODES: cluster.seeds, REDIS_COMMAND_TIMEOUT_MS: '2000', TRUST_PROXY: 'loopback' },
    );
  });
  after(async () => {
    await replicas?.stop();
    await cluster?.stop();
  });

  it('spreads the keys used below over all three masters', () => {
    expect(keysByNode.map((keys) => keys.length >= 3)).to.deep.equal([true, true, true]);
  });

  it('admits exactly 60 of a burst of 90 on a free key, whichever master holds its counters', async () => {
    expect(replicas.gateways.map((gateway) => gateway.listening.redisTopology)).to.deep.equal(['cluster', 'cluster', 'cluster']);
    const admitted: number[] = [];
    const summaries: string[] = [];
    for (const keys of keysByNode) {
      const burst = await burstWithinOneMinute(replicas.urls, keys.slice(0, 3), 90);
      const { codes } = burst;
      admitted.push(burst.admitted);
      summaries.push(burst.summary);
      expect(codes.filter((code) => code === 'rate_limited'), 'BAN_THRESHOLD 10 rejections, then a ban').to.have.length(10);
      expect(codes.filter((code) => code === 'api_key_banned')).to.have.length(20);
    }
    console.log(`      admitted per master (limit 60 of 90): ${admitted.join(', ')}`);
    expect(admitted, summaries.join(' ')).to.deep.equal([60, 60, 60]);
    for (const [index, node] of cluster.nodes.entries()) {
      const counters = await withClient(node.port, (client) => client.keys('{rl:key:cluster-*}:minute:*'));
      expect(counters, `master ${index} holds counters`).to.have.length.at.least(1);
    }
    for (const gateway of replicas.gateways) expect(gateway.lines.filter((line) => /counting in memory/.test(line))).to.deep.equal([]);
  });

  it('counts unauthenticated requests per client address on the cluster too (rate-limiter-flexible)', async () => {
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const minute = Math.floor(Date.now() / 60_000);
      const statuses = await Promise.all(
        Array.from({ length: 90 }, async (_, i) => {
          const response = await fetchWithinContract(`${replicas.urls[i % 3]}/v1/pets`, { headers: { 'X-Forwarded-For': `198.51.100.${attempt + 1}` } });
          await response.arrayBuffer();
          return response.status;
        }),
      );
      if (Math.floor(Date.now() / 60_000) !== minute) continue;
      expect(statuses.filter((status) => status === 401), 'answered: no key').to.have.length(60);
      expect(statuses.filter((status) => status === 429)).to.have.length(30);
      return;
    }
    throw new Error('every burst straddled a minute boundary');
  });

  it('shares bans with every replica, and `npm run keys -- unban` on the cluster lifts them everywhere', async () => {
    // The key each burst above banned: on every replica, whichever master holds it.
    const banned: string[] = [];
    for (const keys of keysByNode) {
      for (const keyId of keys.slice(0, 3)) {
        const codes = await Promise.all(replicas.urls.map((url) => code(url, keyId)));
        if (codes.every((answer) => answer === 'api_key_banned')) {
          banned.push(keyId);
          break;
        }
      }
    }
    expect(banned, 'one banned key per master').to.have.length(3);
    for (const keyId of banned) {
      const lifted = await runKeysCli(['unban', '--id', keyId], { REDIS_CLUSTER_NODES: cluster.seeds });
      expect(lifted.status, lifted.stderr).to.equal(0);
      expect(lifted.stdout).to.equal(`ban lifted for key ${keyId}`);
    }
    await waitFor(async () => {
      const codes = await Promise.all(banned.flatMap((keyId) => replicas.urls.map((url) => code(url, keyId))));
      return codes.every((answer) => answer !== 'api_key_banned');
    }, 5000);
  });

  it('refuses to start with REDIS_URL on one of its nodes: one line naming the variable and the fix', async () => {
    await expectOneLineRefusals([
      [{ REDIS_URL: `redis://127.0.0.1:${cluster.nodes[0]!.port}` }, /^invalid configuration: REDIS_URL: points at a Redis Cluster node.*REDIS_CLUSTER_NODES instead$/],
    ]);
  });
});

/** The counters' node of each key, by CLUSTER KEYSLOT and CLUSTER SLOTS, grouped in node order. */
async function keysPerNode(cluster: RedisClusterServers, keyIds: readonly string[]): Promise<string[][]> {
  const port = cluster.nodes[0]!.port;
  const ranges = (await withClient(port, (client) => client.call('CLUSTER', 'SLOTS'))) as Array<[number, number, [string, number]]>;
  const groups = cluster.nodes.map((): string[] => []);
  for (const keyId of keyIds) {
    const slot = Number(await withClient(port, (client) => client.call('CLUSTER', 'KEYSLOT', `{rl:key:${keyId}}`)));
    const owner = ranges.find(([from, to]) => slot >= from && slot <= to)![2][1];
    groups[cluster.nodes.findIndex((node) => node.port === Number(owner))]!.push(keyId);
  }
  return groups;
}

async function code(url: string, keyId: string): Promise<string> {
  const response = await fetchWithinContract(`${url}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${replicaSecret(keyId)}` } });
  const body = (await response.json()) as { code?: string };
  return response.status === 200 ? 'ok' : (body.code ?? '?');
}
