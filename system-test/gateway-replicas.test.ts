import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { join } from 'node:path';
import { expect } from 'chai';
import { fetchWithinContract } from './support/openapi-validator';
import { type RedisServer, startRedisOrSkip } from './support/redis-server';
import { burstWithinOneMinute, replicaSecret, type ReplicaSet, startReplicaSet } from './support/replica-set';
import { promisedWithin } from './support/wait-for';

const ROOT = join(__dirname, '..');
const BURST_KEYS = ['burst-1', 'burst-2', 'burst-3'];
/** How often a replica rechecks a ban it has cached (BanCache): the bound on an unban reaching it. */
const BAN_RECHECK_MS = 1000;

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

  it('shares the ban, and `npm run keys -- unban --id` lifts it on every replica within a second', async () => {
    const bannedKey = await findBannedKey(replicas.urls);
    const unban = runUnban(bannedKey, redis.url);
    expect(unban.status, unban.stderr).to.equal(0);
    expect(unban.stdout).to.include(`ban lifted for key ${bannedKey}`);

    // Each replica rechecks a cached ban once a second (docs/keys.md): a request sent to it a
    // second after the unban must find the ban lifted. Cached-ban answers cost the key no strike;
    // once lifted, each answer is a strike past the limit (rate_limited), so a replica is asked only
    // until it has answered so, four times a second: too few strikes to ban the key again.
    await Promise.all(
      replicas.urls.map((url) => {
        const codes: string[] = [];
        return promisedWithin(
          async () => {
            const { code } = await get(url, bannedKey);
            codes.push(code);
            return code === 'rate_limited' || code === 'ok';
          },
          BAN_RECHECK_MS,
          () => `${url} answered, in order: ${codes.join(', ')}`,
          250,
        );
      }),
    );

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
