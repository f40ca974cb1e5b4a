import { expect } from 'chai';
import { type RedisSentinelServers, expectOneLineRefusals, startRedisSentinelOrSkip } from './support/redis-topologies';
import { runKeysCli } from './support/keys-cli';
import { burstWithinOneMinute, type ReplicaSet, startReplicaSet } from './support/replica-set';
import { type LogLine, type ServiceProcess, startService } from './support/service-process';
import { freePort } from './support/redis-server';
import { Traffic } from './support/traffic';
import { waitFor } from './support/wait-for';

const DOWN_AFTER_MS = 1000;
/** Bound on a gateway's return to Redis after the Sentinels promoted the replica: a few seconds of its own steps, and room for a busy machine. */
const FOLLOW_MS = 10_000;
const DATA_PASSWORD = 'data-password';
const SENTINEL_PASSWORD = 'sentinel-password';
const FALLBACK = (line: LogLine): boolean => /Redis unavailable, counting in memory/.test(String(line.msg));
const RECOVERY = (line: LogLine): boolean => /Redis is back/.test(String(line.msg));

describe('two gateway processes on a Sentinel-managed Redis (REDIS_SENTINELS, separate credentials), through a failover', function () {
  this.timeout(120_000);
  let servers: RedisSentinelServers;
  let replicas: ReplicaSet;

  before(async function () {
    servers = await startRedisSentinelOrSkip(this, { downAfterMs: DOWN_AFTER_MS, dataPassword: DATA_PASSWORD, sentinelPassword: SENTINEL_PASSWORD });
    replicas = await startReplicaSet(
      2,
      [
        { id: 'steady', plan: 'enterprise', limits: { perMinute: 1_000_000, perDay: 100_000_000 } },
        ...['before-1', 'before-2', 'before-3', 'after-1', 'after-2', 'after-3'].map((id) => ({ id, plan: 'free' as const })),
      ],
      { ...sentinelEnv(), REDIS_COMMAND_TIMEOUT_MS: '2000' },
    );
  });
  after(async () => {
    await replicas?.stop();
    await servers?.stop();
  });

  /** The gateways' settings: the Sentinels' credentials apart from the data nodes'. */
  function sentinelEnv(): NodeJS.ProcessEnv {
    return {
      REDIS_SENTINELS: servers.sentinelList,
      REDIS_SENTINEL_MASTER: servers.masterName,
      REDIS_PASSWORD: DATA_PASSWORD,
      REDIS_SENTINEL_PASSWORD: SENTINEL_PASSWORD,
    };
  }

  it('refuses, in one line naming the variable and the fix, a Sentinel or the replica as REDIS_URL, an unknown master name, either wrong password', async () => {
    const cases: Array<[NodeJS.ProcessEnv, RegExp]> = [
      [
        { REDIS_URL: `redis://:${SENTINEL_PASSWORD}@127.0.0.1:${servers.sentinels[0]!.port}` },
        /^invalid configuration: REDIS_URL: points at a Sentinel, which holds no data; set REDIS_SENTINELS/,
      ],
      [
        { REDIS_URL: `redis://:${DATA_PASSWORD}@127.0.0.1:${servers.replica.port}` },
        /^invalid configuration: REDIS_URL: points at a read-only replica \(READONLY\); point it at the master/,
      ],
      [
        { ...sentinelEnv(), REDIS_SENTINEL_MASTER: 'no-such-master' },
        /^invalid configuration: REDIS_SENTINEL_MASTER: the Sentinels monitor no master named "no-such-master"/,
      ],
      [
        { ...sentinelEnv(), REDIS_SENTINELS: `127.0.0.1:${servers.master.port}`, REDIS_SENTINEL_PASSWORD: DATA_PASSWORD },
        /^invalid configuration: REDIS_SENTINELS: lists a server that is no Sentinel/,
      ],
      [{ ...sentinelEnv(), REDIS_SENTINEL_PASSWORD: 'wrong' }, /^invalid configuration: REDIS_SENTINEL_PASSWORD: the Sentinels refuse the credentials \(.*WRONGPASS/],
      [{ ...sentinelEnv(), REDIS_PASSWORD: 'wrong' }, /^invalid configuration: REDIS_PASSWORD: the master refuses the credentials \(WRONGPASS/],
    ];
    await expectOneLineRefusals(cases);
  });

  it('admits exactly 60 of 90 on a free key across both gateways', async () => {
    expect(replicas.gateways.map((gateway) => gateway.listening.redisTopology)).to.deep.equal(['sentinel', 'sentinel']);
    const { admitted, summary } = await burstWithinOneMinute(replicas.urls, ['before-1', 'before-2', 'before-3'], 90);
    expect(admitted, summary).to.equal(60);
  });

  it('follows the master the Sentinels promote after the old one is killed: no 5xx, exact again afterwards', async () => {
    const oldMaster = servers.master;
    const traffic = new Traffic(replicas.urls, 'steady', 4);
    let windows: Array<{ ms: number; episodes: number; backAt?: number }>;
    let promotedAt: number;
    try {
      await traffic.waitFor(50);
      process.kill(oldMaster.pid, 'SIGKILL');
      const killedAt = Date.now();
      await waitFor(async () => (await servers.masterPort().catch(() => oldMaster.port)) === servers.replica.port, 30_000);
      promotedAt = Date.now();
      const promotedAfter = promotedAt - killedAt;
      await settledOnRedis(replicas.gateways, traffic);
      windows = replicas.gateways.map(localCounting);
      console.log(`      Sentinels promoted the replica ${promotedAfter} ms after the kill (down-after-milliseconds ${DOWN_AFTER_MS})`);
      console.log(`      counting was local on each gateway for: ${windows.map(({ ms, episodes }) => `${ms} ms (${episodes} episode${episodes === 1 ? '' : 's'})`).join(', ')}`);
    } finally {
      await traffic.stop();
      await oldMaster.stop();
    }
    expect(traffic.failures, 'no request failed at the network level or broke the contract').to.deep.equal([]);
    expect(traffic.statuses.filter((status) => status >= 500), 'no 5xx').to.deep.equal([]);
    expect(traffic.statuses.filter((status) => status !== 200), 'every request admitted').to.deep.equal([]);
    // The Sentinels' election takes what the machine gives it; the gateways' part is to follow the
    // promoted master (docs/rate-limits.md: its next INFO, a reconnection pause of up to 1 s, a
    // second reconnection on +switch-master): counted from the promotion the test saw, by each
    // gateway's own clock. The old master is not started again, so only the failover can end it.
    for (const { backAt } of windows) if (backAt !== undefined) expect(backAt - promotedAt!, 'back on Redis after the promotion, ms').to.be.below(FOLLOW_MS);

    const { admitted, summary } = await burstWithinOneMinute(replicas.urls, ['after-1', 'after-2', 'after-3'], 90);
    expect(admitted, `shared counters on the new master: ${summary}`).to.equal(60);
  });

  it('lifts, with `npm run keys -- unban` through the Sentinels, the bans made before and after the failover', async () => {
    const env = sentinelEnv();
    const outcomes: string[] = [];
    for (const keyId of ['before-1', 'before-2', 'before-3', 'after-1', 'after-2', 'after-3']) {
      const run = await runKeysCli(['unban', '--id', keyId], env);
      expect(run.status, run.stderr).to.equal(0);
      outcomes.push(run.stdout);
    }
    // Each burst banned its key (a burst that straddled a minute moved on to the next key).
    expect(outcomes.filter((line) => line.startsWith('ban lifted')), outcomes.join('\n')).to.have.length.at.least(2);
  });
});

/**
 * Issue 34: ioredis's failover detector opens a client to every Sentinel it knows, with no 'error'
 * listener, so a listed Sentinel that does not resolve (a StatefulSet member not scheduled yet) or
 * refuses connections made ioredis print `[ioredis] Unhandled error event:` and a stack on stderr,
 * once a minute and again after every reconnection, a failover's included.
 */
describe('a gateway whose REDIS_SENTINELS lists a name that does not resolve and a port nobody listens on: JSON lines only, through a failover', function () {
  this.timeout(120_000);
  const SENTINEL_LINE = 'Redis Sentinel not answering; the others are asked meanwhile';
  let servers: RedisSentinelServers;
  let gateway: ServiceProcess | undefined;

  before(async function () {
    servers = await startRedisSentinelOrSkip(this, { downAfterMs: DOWN_AFTER_MS, dataPassword: DATA_PASSWORD, sentinelPassword: SENTINEL_PASSWORD });
  });
  after(async () => {
    await gateway?.stop();
    await servers?.stop();
  });

  it('logs each unanswering Sentinel as one warn line a minute (every attempt at debug), and nothing but JSON', async () => {
    const missing = 'redis-9.redis.petstore.invalid:26379';
    const refusing = `127.0.0.1:${await freePort()}`;
    gateway = await startService('gateway', {
      REDIS_SENTINELS: `${servers.sentinelList},${missing},${refusing}`,
      REDIS_SENTINEL_MASTER: servers.masterName,
      REDIS_PASSWORD: DATA_PASSWORD,
      REDIS_SENTINEL_PASSWORD: SENTINEL_PASSWORD,
      PET_SERVICE_ADDR: '127.0.0.1:9',
      LOG_LEVEL: 'debug',
    });
    const about = (sentinel: string): LogLine[] => gateway!.logs.filter((line) => line.msg === SENTINEL_LINE && line.sentinel === sentinel);
    // Once on the master, the failover detector dials every Sentinel listed.
    await waitFor(() => about(missing).length > 0 && about(refusing).length > 0, 20_000, () => gateway!.lines.join('\n'));
    const seen = { [missing]: about(missing).length, [refusing]: about(refusing).length };

    // The master dies: the gateway reconnects to the promoted replica, and a new failover detector
    // dials every Sentinel again, usually within the same minute (at debug, then).
    process.kill(servers.master.pid, 'SIGKILL');
    await waitFor(async () => (await servers.masterPort().catch(() => servers.master.port)) === servers.replica.port, 30_000);
    await waitFor(() => about(missing).length > seen[missing]! && about(refusing).length > seen[refusing]!, 30_000, () => gateway!.lines.join('\n'));

    for (const sentinel of [missing, refusing]) {
      const warnings = about(sentinel).filter((line) => line.level === 40);
      // Once a minute at most, by the gateway's clock: the dials of a slow failover can fall in a
      // second minute, whose warning then says how many attempts it stands for.
      expect(warnings.length, sentinel).to.be.at.least(1);
      expect(warnings[0]!.occurrences).to.equal(1);
      for (let index = 1; index < warnings.length; index += 1) {
        expect(Number(warnings[index]!.time) - Number(warnings[index - 1]!.time), `${sentinel}: warnings ${index} and ${index + 1} apart, ms`).to.be.at.least(59_900);
      }
      for (const warning of warnings) expect(String(warning.reason)).to.match(sentinel === missing ? /ENOTFOUND redis-9\.redis\.petstore\.invalid/ : /ECONNREFUSED/);
    }
    const notJson = gateway.lines.filter((line) => {
      try {
        return typeof JSON.parse(line) !== 'object';
      } catch {
        return true;
      }
    });
    expect(notJson, 'stdout lines that are not JSON').to.deep.equal([]);
    expect(gateway.errorLines, 'stderr').to.deep.equal([]);
  });
});

const episodeLines = (gateway: ServiceProcess): LogLine[] => gateway.logs.filter((line) => FALLBACK(line) || RECOVERY(line));

/**
 * Resolves once every gateway counts in Redis and has gone on doing so for a further 100 responses
 * of `traffic`: a client that reconnected to the new master before a Sentinel announced it
 * (`+switch-master`) reconnects once more when the announcement comes, a short second episode. A
 * gateway that never fell back (no request of its met the outage) is on Redis when its readiness
 * says so. On a timeout, the error says where each gateway stood.
 */
async function settledOnRedis(gateways: readonly ServiceProcess[], traffic: Traffic): Promise<void> {
  const stateOf = async (gateway: ServiceProcess): Promise<{ redis: string | undefined; last: string | undefined }> => {
    const ready = (await (await fetch(`http://127.0.0.1:${gateway.adminPort}/readyz`)).json()) as { checks: Record<string, string> };
    return { redis: ready.checks.redis, last: episodeLines(gateway).at(-1)?.msg as string | undefined };
  };
  const onRedis = ({ redis, last }: { redis: string | undefined; last: string | undefined }): boolean =>
    redis === 'ok' && (last === undefined || RECOVERY({ msg: last }));
  let episodes = -1;
  try {
    await waitFor(async () => {
      const seen = gateways.reduce((sum, gateway) => sum + episodeLines(gateway).length, 0);
      const settled = seen === episodes && (await Promise.all(gateways.map(stateOf))).every(onRedis);
      episodes = seen;
      if (!settled) await traffic.waitFor(100);
      return settled;
    }, 30_000);
  } catch (error) {
    const states = await Promise.all(gateways.map(stateOf));
    throw new Error(`${(error as Error).message}; gateways: ${JSON.stringify(states)}`, { cause: error });
  }
}

/**
 * From the gateway's first fallback line to its last recovery line, in its own clock (pino's
 * `time`), how many times it fell back, and when it was last back on Redis.
 */
function localCounting(gateway: ServiceProcess): { ms: number; episodes: number; backAt?: number } {
  const lines = episodeLines(gateway);
  const fallbacks = lines.filter(FALLBACK);
  if (fallbacks.length === 0) return { ms: 0, episodes: 0 };
  const backAt = Number(lines.at(-1)!.time);
  return { ms: backAt - Number(fallbacks[0]!.time), episodes: fallbacks.length, backAt };
}
