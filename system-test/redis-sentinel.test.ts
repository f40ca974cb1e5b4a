import { expect } from 'chai';
import { type RedisSentinelServers, expectOneLineRefusals, startRedisSentinelOrSkip } from './support/redis-topologies';
import { runKeysCli } from './support/keys-cli';
import { burstWithinOneMinute, type ReplicaSet, startReplicaSet } from './support/replica-set';
import type { LogLine, ServiceProcess } from './support/service-process';
import { Traffic } from './support/traffic';
import { waitFor } from './support/wait-for';

const DOWN_AFTER_MS = 1000;
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
    const { statuses } = await burstWithinOneMinute(replicas.urls, ['before-1', 'before-2', 'before-3'], 90);
    expect(statuses.filter((status) => status === 200)).to.have.length(60);
  });

  it('follows the master the Sentinels promote after the old one is killed: no 5xx, exact again afterwards', async () => {
    const oldMaster = servers.master;
    const traffic = new Traffic(replicas.urls, 'steady', 4);
    let windows: number[];
    try {
      await traffic.waitFor(50);
      process.kill(oldMaster.pid, 'SIGKILL');
      const killedAt = Date.now();
      await waitFor(async () => (await servers.masterPort().catch(() => oldMaster.port)) === servers.replica.port, 30_000);
      const promotedAfter = Date.now() - killedAt;
      windows = await Promise.all(replicas.gateways.map((gateway) => localCountingWindow(gateway)));
      console.log(`      Sentinels promoted the replica ${promotedAfter} ms after the kill (down-after-milliseconds ${DOWN_AFTER_MS})`);
      console.log(`      counting was local on each gateway for: ${windows.map((ms) => `${ms} ms`).join(', ')}`);
      await traffic.waitFor(50);
    } finally {
      await traffic.stop();
      await oldMaster.stop();
    }
    expect(traffic.failures, 'no request failed at the network level or broke the contract').to.deep.equal([]);
    expect(traffic.statuses.filter((status) => status >= 500), 'no 5xx').to.deep.equal([]);
    expect(traffic.statuses.filter((status) => status !== 200), 'every request admitted').to.deep.equal([]);
    for (const ms of windows) expect(ms, 'the failover, not a restart, ended local counting').to.be.below(20_000);

    const { statuses } = await burstWithinOneMinute(replicas.urls, ['after-1', 'after-2', 'after-3'], 90);
    expect(statuses.filter((status) => status === 200), 'shared counters on the new master').to.have.length(60);
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

/** From the gateway's fallback log line to its recovery line, in its own clock (pino's `time`). */
async function localCountingWindow(gateway: ServiceProcess): Promise<number> {
  const fellBack = await gateway.waitForLog(FALLBACK, 30_000);
  const recovered = await gateway.waitForLog(RECOVERY, 30_000);
  return Number(recovered.time) - Number(fellBack.time);
}
