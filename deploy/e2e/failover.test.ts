import { expect } from 'chai';
import { expectWithinContract } from '../../system-test/support/openapi-validator';
import { waitFor } from '../../system-test/support/wait-for';
import { clusterOrPending, figure, kubectl, pods } from './support/kube';
import { bearer, deployed } from './support/deployment';
import { SteadyLoad } from './support/steady-load';

/**
 * docs/rate-limits.md: how long, per gateway, a Sentinel failover leaves the limits counted in
 * each gateway's memory (from its first fallback to its last return to Redis).
 */
const LOOSE_AT_MOST_SECONDS = 10;
const FREE_PER_MINUTE = 60;
const namespace = 'petstore';

/** `count` requests at once through the Service: the statuses. */
async function burst(url: string, keyId: string, count: number): Promise<number[]> {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const target = `${url}/v1/pets?limit=1`;
      const response = await fetch(target, { headers: bearer(keyId), signal: AbortSignal.timeout(10_000) });
      const text = await response.text();
      expectWithinContract('GET', target, { status: response.status, headers: response.headers, text });
      return response.status;
    }),
  );
}

const admitted = (statuses: number[]) => statuses.filter((status) => status === 200).length;
const minuteNow = () => Math.floor(Date.now() / 60_000);
const secondOfMinute = () => new Date().getUTCSeconds() + new Date().getUTCMilliseconds() / 1000;

/** Waits until the UTC minute is at `from` seconds or later and below `to`. */
async function waitForSecondOfMinute(from: number, to: number): Promise<void> {
  while (secondOfMinute() < from || secondOfMinute() >= to) await new Promise((resolve) => setTimeout(resolve, 200));
}

/** What a gateway logs when it starts and stops counting in memory (FallbackRateLimiter). */
const FALLBACK_STARTS = 'rate limiter: Redis unavailable, counting in memory on this replica';
const FALLBACK_ENDS = 'rate limiter: Redis is back, counting in Redis again';

interface FallbackEvent {
  readonly at: number;
  readonly usingFallback: boolean;
}

/** A gateway's switches between Redis and its memory since `since` (its JSON log lines). */
async function fallbackEvents(pod: string, since: Date): Promise<FallbackEvent[]> {
  const logs = await kubectl(['-n', namespace, 'logs', pod, `--since-time=${since.toISOString()}`]);
  const events: FallbackEvent[] = [];
  for (const line of logs.split('\n')) {
    if (!line.startsWith('{')) continue;
    const entry = JSON.parse(line) as { time: number; msg?: string };
    if (entry.msg === FALLBACK_STARTS) events.push({ at: entry.time, usingFallback: true });
    if (entry.msg === FALLBACK_ENDS) events.push({ at: entry.time, usingFallback: false });
  }
  return events;
}

async function sentinelMaster(): Promise<string> {
  const answer = await kubectl(['-n', namespace, 'exec', 'redis-0', '-c', 'sentinel', '--', 'redis-cli', '-p', '26379', '--raw', 'SENTINEL', 'get-master-addr-by-name', 'petstore-limits']);
  return answer.split('\n')[0]!.trim();
}

describe('deploy/e2e: production, the Redis Sentinel master deleted under load', function () {
  this.timeout(600_000);

  before(function () {
    clusterOrPending(this);
  });

  it(`keeps limits exact before and after, fails no request, and loosens them at most ${LOOSE_AT_MOST_SECONDS} s per gateway`, async () => {
    const { gatewayUrl } = (await deployed()).production;
    const gateways = await pods(namespace, 'app.kubernetes.io/name=gateway');
    const master = await sentinelMaster();
    const masterPod = master.split('.')[0]!;
    expect(masterPod).to.match(/^redis-[0-2]$/);

    await waitForSecondOfMinute(1, 5);
    expect(admitted(await burst(gatewayUrl, 'exact-before', 90)), 'admitted of 90, before').to.equal(FREE_PER_MINUTE);
    expect(admitted(await burst(gatewayUrl, 'exact-across', FREE_PER_MINUTE)), 'spent before the failover').to.equal(FREE_PER_MINUTE);
    const spentInMinute = minuteNow();

    // Through the Service, a client's kept-alive connections all end at one gateway or two: load
    // each gateway on its pod IP instead (4 requests/s each), so that each one's window is seen.
    const loads = gateways.map((pod) => new SteadyLoad(`http://${pod.ip}:8080`, bearer('load'), 4));
    const deletedAt = new Date();
    await kubectl(['-n', namespace, 'delete', 'pod', masterPod, '--wait=false']);

    // Over when every gateway that fell back is back on Redis, and the Sentinels name a master.
    const deadline = Date.now() + 120_000;
    let events: Map<string, FallbackEvent[]>;
    for (;;) {
      events = new Map(await Promise.all(gateways.map(async (pod) => [pod.name, await fallbackEvents(pod.name, deletedAt)] as const)));
      const lists = [...events.values()];
      const settled = lists.every((list) => list.length > 0 && !list.at(-1)!.usingFallback);
      if (settled && Date.now() - deletedAt.getTime() > 10_000) break;
      if (Date.now() > deadline) throw new Error(`gateways still counting in memory: ${JSON.stringify(Object.fromEntries(events))}`);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    const across = await burst(gatewayUrl, 'exact-across', 10);
    const sameMinute = minuteNow() === spentInMinute;
    const summaries = await Promise.all(loads.map((load) => load.stop()));
    const summary = {
      sent: summaries.reduce((sum, one) => sum + one.sent, 0),
      failed: summaries.reduce((sum, one) => sum + one.failed, 0),
      problems: summaries.flatMap((one) => one.problems),
      byStatus: summaries.reduce<Record<string, number>>((all, one) => {
        for (const [status, count] of Object.entries(one.byStatus)) all[status] = (all[status] ?? 0) + count;
        return all;
      }, {}),
    };
    const newMaster = await sentinelMaster();

    const looseSeconds = (list: FallbackEvent[]) => (list.length === 0 ? 0 : (list.at(-1)!.at - list[0]!.at) / 1000);
    for (const [pod, list] of events) {
      const loose = looseSeconds(list);
      figure(`production failover: ${pod} counted in memory for`, `${loose.toFixed(1)} s (${list.filter((e) => e.usingFallback).length} episode(s))`);
    }
    figure('production failover: master', `${master} -> ${newMaster}`);
    figure('production failover: requests during it', `${summary.sent} sent, ${summary.failed} failed, statuses ${JSON.stringify(summary.byStatus)}`);

    expect(summary.problems).to.deep.equal([]);
    expect(Object.keys(summary.byStatus).filter((status) => Number(status) >= 500)).to.deep.equal([]);
    expect(sameMinute, 'the failover ended within the minute it began in').to.equal(true);
    expect(admitted(across), 'the key spent before the failover is still spent after it').to.equal(0);
    for (const [pod, list] of events) expect(looseSeconds(list), pod).to.be.at.most(LOOSE_AT_MOST_SECONDS);

    // The deleted master came back empty (nothing is persisted): a replica of the promoted one,
    // never the master whose empty data set the others would copy. (If it could not ask the
    // Sentinels in time, it starts alone as a master and the Sentinels demote it: hence the wait.)
    expect(newMaster).to.not.equal(master);
    await kubectl(['-n', namespace, 'wait', '--for=condition=Ready', `pod/${masterPod}`, '--timeout=120s']);
    const role = async () => (await kubectl(['-n', namespace, 'exec', masterPod, '-c', 'redis', '--', 'redis-cli', '--raw', 'ROLE'])).split('\n').slice(0, 2).join(' ');
    await waitFor(async () => (await role()) === `slave ${newMaster}`, 30_000, () => `${masterPod} is not a replica of ${newMaster}`);

    await waitForSecondOfMinute(2, 50);
    expect(admitted(await burst(gatewayUrl, 'exact-after', 90)), 'admitted of 90, after').to.equal(FREE_PER_MINUTE);
  });
});
