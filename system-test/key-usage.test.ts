import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Context } from 'mocha';
import type { RedisTarget } from '../gateway/src/config';
import { sha256Hex } from '../gateway/src/keys/api-keys';
import type { KeyUsageReport, UsageReport } from '../gateway/src/keys/key-usage';
import { windowIndex } from '../gateway/src/rate-limit/rate-limiter';
import { checkAtStartup, connectRedis } from '../gateway/src/rate-limit/redis-connection';
import { RedisRateLimiter } from '../gateway/src/rate-limit/redis-rate-limiter';
import { runKeysCli } from './support/keys-cli';
import { type RateLimitStack, secretOf, startRateLimitStack } from './support/rate-limit-stack';
import { type RedisServer, startRedisOrSkip } from './support/redis-server';
import { clusterTarget, type RedisClusterServers, startRedisClusterOrSkip } from './support/redis-topologies';

const BAN_SECONDS = 900;
/** The third refusal within one blocked window bans. */
const SETTINGS = { unauthenticatedPerMinute: 5, ban: { threshold: 2, seconds: BAN_SECONDS } };
const KEYS = [
  { id: 'tight', plan: 'enterprise', limits: { perMinute: 3, perDay: 5 } },
  { id: 'idle', plan: 'free' },
] as const;
const MINUTE = { name: 'minute', limit: 3, seconds: 60 };
const DAY = { name: 'day', limit: 5, seconds: 86_400 };

const iso = (ms: number): string => new Date(ms).toISOString();
const minuteEnd = (ms: number): string => iso((Math.floor(ms / 60_000) + 1) * 60_000);
const dayEnd = (ms: number): string => iso((Math.floor(ms / 86_400_000) + 1) * 86_400_000);

async function codeOf(response: Response): Promise<string> {
  return response.status === 200 ? 'ok' : ((await response.json()) as { code: string }).code;
}

/**
 * Sends the key `tight` (3 a minute, 5 a day) five requests through the gateway: three admitted,
 * two refused, which the usage must show as 3 used, nothing of the minute and 2 of the day left.
 */
async function spendThreeRefuseTwo(stack: RateLimitStack): Promise<void> {
  const codes: string[] = [];
  for (let i = 0; i < 5; i += 1) codes.push(await codeOf(await stack.request('/v1/pets?limit=1', 'tight')));
  expect(codes).to.deep.equal(['ok', 'ok', 'ok', 'rate_limited', 'rate_limited']);
}

/** One more refusal than the ban threshold tolerates. */
async function getBanned(stack: RateLimitStack): Promise<void> {
  expect(await codeOf(await stack.request('/v1/pets?limit=1', 'tight'))).to.equal('api_key_banned');
}

function expectTight(report: ReturnType<typeof figures>, at: number, bannedUntil: number | null): void {
  expect(report).to.deep.equal({
    minute: { limit: 3, used: 3, remaining: 0, resetsAt: minuteEnd(at) },
    day: { limit: 5, used: 3, remaining: 2, resetsAt: dayEnd(at) },
    banned: bannedUntil !== null,
    bannedUntil: bannedUntil === null ? null : iso(bannedUntil),
  });
}

/** The usage figures of one key's report, without who and when. */
function figures(body: Record<string, unknown>): Omit<KeyUsageReport, 'id' | 'plan'> {
  const { minute, day, banned, bannedUntil } = body as unknown as KeyUsageReport;
  return { minute, day, banned, bannedUntil };
}

async function adminUsage(stack: RateLimitStack, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${stack.adminUrl}${path}`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('per-key usage, in-memory store: GET /admin/usage on the replica', () => {
  const START = Date.UTC(2030, 0, 1, 12, 0, 18);
  let stack: RateLimitStack;

  beforeEach(async () => {
    stack = await startRateLimitStack({ keys: KEYS, rateLimits: SETTINGS, startAt: START });
  });
  afterEach(() => stack.close());

  it('matches what the gateway admitted and refused, says the figures are the replica\'s, and reads without spending', async () => {
    await spendThreeRefuseTwo(stack);
    for (let read = 0; read < 2; read += 1) {
      const { status, body } = await adminUsage(stack, '/admin/usage/tight');
      expect(status).to.equal(200);
      expect([body.scope, body.at, body.id, body.plan]).to.deep.equal(['replica', iso(START), 'tight', 'enterprise']);
      expectTight(figures(body), START, null);
    }
    const all = await adminUsage(stack, '/admin/usage');
    const report = all.body as unknown as UsageReport;
    expect(report.scope).to.equal('replica');
    expect(report.keys.map((key) => [key.id, key.plan, key.minute.used, key.minute.remaining, key.day.remaining])).to.deep.equal([
      ['tight', 'enterprise', 3, 0, 2],
      ['idle', 'free', 0, 60, 1000],
    ]);
    stack.setNow(START + 60_000);
    expect(await codeOf(await stack.request('/v1/pets?limit=1', 'tight')), 'the reads spent nothing').to.equal('ok');
  });

  it('shows a ban and its end, and 404 for a key the file does not hold', async () => {
    await spendThreeRefuseTwo(stack);
    await getBanned(stack);
    const { body } = await adminUsage(stack, '/admin/usage/tight');
    expectTight(figures(body), START, START + BAN_SECONDS * 1000);
    const unknown = await adminUsage(stack, '/admin/usage/nobody');
    expect(unknown.status).to.equal(404);
    expect(unknown.body.code).to.equal('not_found');
  });
});

/** A shared Redis deployment for one suite: the target the gateway uses, and the CLI's environment for it. */
interface SharedStore {
  readonly target: RedisTarget;
  readonly env: NodeJS.ProcessEnv;
  stop(): Promise<void>;
}

/**
 * The gateway spends a key on Redis; `npm run keys -- usage` reads it back. The CLI reads at the
 * wall clock, so the stack's clock is frozen at the wall clock's reading when the suite starts, and
 * the expected figures are those of the window the CLI's own reading (`at`) falls in.
 */
function sharedStoreSuite(name: string, start: (context: Context) => Promise<SharedStore>): void {
  describe(`per-key usage on ${name}: npm run keys -- usage and GET /admin/usage`, function () {
    this.timeout(60_000);
    let store: SharedStore;
    let stack: RateLimitStack;
    let dir: string;
    let env: NodeJS.ProcessEnv;
    let spentAt: number;

    before(async function () {
      store = await start(this);
      dir = mkdtempSync(join(tmpdir(), 'key-usage-'));
      const file = join(dir, 'keys.yaml');
      writeFileSync(file, JSON.stringify({ keys: KEYS.map((key) => ({ ...key, sha256: sha256Hex(secretOf(key.id)) })) }));
      env = { ...store.env, API_KEYS_FILE: file, BAN_THRESHOLD: String(SETTINGS.ban.threshold), BAN_SECONDS: String(BAN_SECONDS) };
      const redis = connectRedis({ target: store.target, commandTimeoutMs: 2000 });
      expect(await checkAtStartup(redis, store.target, 10_000)).to.deep.equal({ state: 'ready' });
      spentAt = Date.now();
      // The stack closes the limiter, and the limiter the connection.
      stack = await startRateLimitStack({
        keys: KEYS,
        rateLimits: SETTINGS,
        startAt: spentAt,
        usageScope: 'shared',
        limiter: (now) => new RedisRateLimiter({ redis, now }),
      });
      await spendThreeRefuseTwo(stack);
      await getBanned(stack);
    });
    after(async () => {
      await stack?.close();
      await store?.stop();
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    });

    it('the admin endpoint reads the shared counters', async () => {
      const { body } = await adminUsage(stack, '/admin/usage/tight');
      expect([body.scope, body.at]).to.deep.equal(['shared', iso(spentAt)]);
      expectTight(figures(body), spentAt, spentAt + BAN_SECONDS * 1000);
    });

    it('prints each key\'s usage as JSON: what the gateway admitted and refused, and the ban with its end', async () => {
      const run = await runKeysCli(['usage', '--json'], env, 'direct');
      expect(run.status, run.stderr).to.equal(0);
      const report = JSON.parse(run.stdout) as UsageReport;
      const readAt = Date.parse(report.at);
      expect(readAt).to.be.at.least(spentAt);
      expect(report.scope).to.equal('shared');
      const sameMinute = windowIndex(MINUTE, readAt) === windowIndex(MINUTE, spentAt);
      const sameDay = windowIndex(DAY, readAt) === windowIndex(DAY, spentAt);
      const [tight, idle] = report.keys;
      expect(tight).to.deep.equal({
        id: 'tight',
        plan: 'enterprise',
        minute: { limit: 3, used: sameMinute ? 3 : 0, remaining: sameMinute ? 0 : 3, resetsAt: minuteEnd(readAt) },
        day: { limit: 5, used: sameDay ? 3 : 0, remaining: sameDay ? 2 : 5, resetsAt: dayEnd(readAt) },
        banned: true,
        bannedUntil: iso(spentAt + BAN_SECONDS * 1000),
      });
      expect([idle!.id, idle!.plan, idle!.minute.used, idle!.day.remaining, idle!.banned]).to.deep.equal(['idle', 'free', 0, 1000, false]);
    });

    it('prints one key as a table with --id', async () => {
      const run = await runKeysCli(['usage', '--id', 'tight'], env, 'direct');
      expect(run.status, run.stderr).to.equal(0);
      const lines = run.stdout.split('\n');
      expect(lines).to.have.length(2);
      expect(lines[1]!.split(/ {2,}/).slice(0, 2)).to.deep.equal(['tight', 'enterprise']);
      expect(lines[1]!.split(/ {2,}/).at(-1)).to.equal(iso(spentAt + BAN_SECONDS * 1000));
      expect(run.stderr).to.match(/shared counters every gateway spends/);
    });
  });
}

sharedStoreSuite('a standalone Redis', async (context) => {
  const server: RedisServer = await startRedisOrSkip(context);
  return {
    target: { kind: 'standalone', variable: 'REDIS_URL', url: server.url },
    env: { REDIS_URL: server.url, REDIS_CLUSTER_NODES: '', REDIS_SENTINELS: '' },
    stop: () => server.stop(),
  };
});

sharedStoreSuite('a three-master Redis Cluster', async (context) => {
  const cluster: RedisClusterServers = await startRedisClusterOrSkip(context, 3);
  return {
    target: clusterTarget(cluster),
    env: { REDIS_URL: '', REDIS_CLUSTER_NODES: cluster.seeds, REDIS_SENTINELS: '' },
    stop: () => cluster.stop(),
  };
});

describe('npm run keys -- usage and unban without a shared store', () => {
  it('says the counters are per replica and points to the admin endpoint', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'key-usage-'));
    try {
      const file = join(dir, 'keys.yaml');
      writeFileSync(file, 'keys: []\n');
      const run = await runKeysCli(['usage'], { API_KEYS_FILE: file, REDIS_URL: '', REDIS_CLUSTER_NODES: '', REDIS_SENTINELS: '' }, 'direct');
      expect(run.status).to.equal(1);
      expect(run.stderr).to.match(/each gateway counts its own requests/);
      expect(run.stderr).to.match(/GET \/admin\/usage/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('unban: says why, prefixed "keys unban:" as every command\'s errors are, and points to the admin endpoint', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'key-usage-'));
    try {
      const file = join(dir, 'keys.yaml');
      writeFileSync(file, 'keys: []\n');
      const run = await runKeysCli(['unban', '--id', 'someone'], { API_KEYS_FILE: file, REDIS_URL: '', REDIS_CLUSTER_NODES: '', REDIS_SENTINELS: '' }, 'direct');
      expect(run.status).to.equal(1);
      expect(run.stderr.trim()).to.equal(
        'keys unban: REDIS_URL is not set (nor REDIS_CLUSTER_NODES, REDIS_SENTINELS); with in-memory counters use DELETE /admin/bans/<keyId> on the admin port',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
