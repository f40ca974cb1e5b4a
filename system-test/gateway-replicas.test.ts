import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { join } from 'node:path';
import { expect } from 'chai';
import { fetchWithinContract } from './support/openapi-validator';
import { type RedisServer, startRedisOrSkip } from './support/redis-server';
import { burstWithinOneMinute, replicaSecret, type ReplicaSet, startReplicaSet } from './support/replica-set';
import { waitFor } from './support/wait-for';

const ROOT = join(__dirname, '..');
const BURST_KEYS = ['burst-1', 'burst-2', 'burst-3'];

describe('two gateway processes sharing one Redis', function () {
  this.timeout(60_000);
  let redis: RedisServer;
  let replicas: ReplicaSet;

  before(async function () {
    redis = await startRedisOrSkip(this);
    replicas = await startReplicaSet(
      2,
      BURST_KEYS.map((id) => ({ id, plan: 'free' })),
      // Exactness across replicas is the subject here, not the fallback: a Redis reply slowed past
      // the default 200 ms by a loaded machine would count that request in memory instead.
      { REDIS_URL: redis.url, REDIS_COMMAND_TIMEOUT_MS: '2000' },
    );
  });
  after(async () => {
    await replicas?.stop();
    await redis?.stop();
  });

  it('allows exactly 60 of 90 concurrent requests of one free key spread over both', async () => {
    expect(replicas.gateways.map((g) => g.listening.rateLimitStore)).to.deep.equal(['redis', 'redis']);
    const { statuses, codes, admitted, summary } = await burstWithinOneMinute(replicas.urls, BURST_KEYS, 90);
    expect(admitted, summary).to.equal(60);
    expect(statuses.filter((status) => status === 429)).to.have.length(30);
    expect(codes.filter((code) => code === 'rate_limited'), 'BAN_THRESHOLD 10 rejections').to.have.length(10);
    expect(codes.filter((code) => code === 'api_key_banned'), 'then banned on both replicas').to.have.length(20);
  });

  it('shares the ban, and `npm run keys -- unban --id` lifts it on every replica within about a second', async () => {
    const bannedKey = await findBannedKey(replicas.urls);
    const unban = runUnban(bannedKey, redis.url);
    expect(unban.status, unban.stderr).to.equal(0);
    expect(unban.stdout).to.include(`ban lifted for key ${bannedKey}`);

    const started = Date.now();
    for (const url of replicas.urls) {
      // Cached-ban answers cost the key no strike, so polling cannot re-ban it.
      let code = '';
      await waitFor(async () => (code = (await get(url, bannedKey)).code) !== 'api_key_banned', 3000, () => `${url} still answers ${code}`);
      expect(code, url).to.be.oneOf(['rate_limited', 'ok']);
    }
    expect(Date.now() - started, 'propagation is bounded by the 1 s recheck').to.be.below(2500);

    const again = runUnban(bannedKey, redis.url);
    expect(again.status).to.equal(0);
    expect(again.stdout).to.include(`no ban in force for key ${bannedKey}`);
  });

  it('refuses to unban without REDIS_URL and names the admin endpoint instead', () => {
    const result = runUnban('burst-1', '');
    expect(result.status).to.equal(1);
    expect(result.stderr).to.match(/REDIS_URL is not set.*DELETE \/admin\/bans/);
  });
});

/** `npm run keys -- unban --id <keyId>`, as an operator types it. */
function runUnban(keyId: string, redisUrl: string): SpawnSyncReturns<string> {
  return spawnSync('npm', ['run', '--silent', 'keys', '--', 'unban', '--id', keyId], {
    cwd: ROOT,
    env: { ...process.env, REDIS_URL: redisUrl },
    encoding: 'utf8',
  });
}

async function findBannedKey(urls: readonly string[]): Promise<string> {
  for (const keyId of BURST_KEYS) {
    const responses = await Promise.all(urls.map((url) => get(url, keyId)));
    if (responses.every((body) => body.code === 'api_key_banned')) return keyId;
  }
  throw new Error('no burst key is banned on every replica');
}

async function get(url: string, keyId: string): Promise<{ code: string }> {
  const response = await fetchWithinContract(`${url}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${replicaSecret(keyId)}` } });
  const body = (await response.json()) as { code?: string };
  return { code: response.status === 200 ? 'ok' : (body.code ?? '?') };
}
