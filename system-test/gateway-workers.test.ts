import { expect } from 'chai';
import { type RedisServer, startRedisOrSkip } from './support/redis-server';
import { burstWithinOneMinute, replicaSecret, type ReplicaSet, startReplicaSet } from './support/replica-set';
import { type ServiceProcess, STARTUP_TIMEOUT_MS } from './support/service-process';
import { waitFor } from './support/wait-for';

const BURST_KEYS = ['burst-1', 'burst-2', 'burst-3'];

describe('one gateway with GATEWAY_WORKERS=2 (Node cluster, counters in Redis)', function () {
  this.timeout(60_000);
  let redis: RedisServer;
  let replicas: ReplicaSet;
  let gateway: ServiceProcess;
  let url: string;
  let admin: string;

  before(async function () {
    redis = await startRedisOrSkip(this);
    replicas = await startReplicaSet(
      1,
      [...BURST_KEYS.map((id) => ({ id, plan: 'free' as const })), { id: 'roomy', plan: 'enterprise', limits: { perMinute: 100_000, perDay: 1_000_000 } }],
      // Exactness across workers is the subject here, not the fallback (see gateway-replicas).
      { REDIS_URL: redis.url, GATEWAY_WORKERS: '2', REDIS_COMMAND_TIMEOUT_MS: '2000', METRICS_KEY_IDS: 'roomy' },
    );
    gateway = replicas.gateways[0]!;
    url = replicas.urls[0]!;
    admin = `http://127.0.0.1:${gateway.adminPort}`;
  });
  after(async () => {
    await replicas?.stop();
    await redis?.stop();
  });

  // Workers log asynchronously (batched, flushed every 100 ms), so their lines are waited for.
  const linesOf = (msg: string) => gateway.logs.filter((line) => line.msg === msg);
  const untilLogged = (msg: string, count: number) => waitFor(async () => linesOf(msg).length >= count, 5000);

  it('announces itself once, after both workers serve', async () => {
    expect(gateway.listening).to.include({ msg: 'gateway listening', workers: 2, rateLimitStore: 'redis' });
    await untilLogged('gateway worker serving', 2);
    expect(linesOf('gateway listening')).to.have.length(1);
  });

  it('allows exactly 60 of 90 concurrent requests of one free key, though both workers answer', async () => {
    const { statuses, admitted, summary } = await burstWithinOneMinute([url], BURST_KEYS, 90);
    expect(admitted, summary).to.equal(60);
    expect(statuses.filter((status) => status === 429)).to.have.length(30);
    await untilLogged('request', 90);
    const answeredBy = new Set(linesOf('request').map((line) => line.worker));
    expect([...answeredBy].sort()).to.deep.equal([1, 2]);
  });

  it('serves /metrics on the admin port summed over the workers', async () => {
    const counted = async (): Promise<number> => {
      const text = await (await fetch(`${admin}/metrics`)).text();
      return [...text.matchAll(/^http_requests_total\{([^}]*)\} (\d+)$/gm)]
        .filter(([, labels]) => labels!.includes('route="/v1/pets"'))
        .reduce((sum, [, , count]) => sum + Number(count), 0);
    };
    const logged = (): number => linesOf('request').filter((line) => line.route === '/v1/pets').length;
    expect(await counted()).to.be.at.least(60);
    // Every /v1/pets request either worker logged, once its batched log lines are out.
    await waitFor(async () => (await counted()) === logged(), 5000);
  });

  it('combines the workers\' state gauges as their minimum, not their sum', async () => {
    const text = await (await fetch(`${admin}/metrics`)).text();
    expect(text).to.match(/^pet_service_serving 1$/m);
    expect(text).to.match(/^api_keys_last_reload_successful 1$/m);
  });

  it('reports both workers in /readyz', async () => {
    const response = await fetch(`${admin}/readyz`);
    expect(response.status).to.equal(200);
    expect(((await response.json()) as { checks: Record<string, string> }).checks).to.include({ workers: 'ok', petService: 'ok' });
  });

  it('answers GET /admin/usage from the shared counters, and counts the listed key by id in /metrics', async () => {
    const startedAt = Date.now();
    const headers = { authorization: `Bearer ${replicaSecret('roomy')}` };
    for (let i = 0; i < 4; i += 1) expect((await fetch(`${url}/v1/pets?limit=1`, { headers })).status).to.equal(200);
    const usage = (await (await fetch(`${admin}/admin/usage/roomy`)).json()) as { scope: string; at: string; day: { used: number } };
    const sameDay = Math.floor(Date.parse(usage.at) / 86_400_000) === Math.floor(startedAt / 86_400_000);
    expect([usage.scope, usage.day.used]).to.deep.equal(['shared', sameDay ? 4 : 0]);
    const text = await (await fetch(`${admin}/metrics`)).text();
    expect(text).to.match(/^rate_limit_key_decisions_total\{key_id="roomy",outcome="allowed"\} 4$/m);
    expect(text).to.match(/^rate_limit_key_decisions_total\{key_id="roomy",outcome="banned"\} 0$/m);
    expect(text).to.not.match(/key_id="burst-1"/);
  });

  it('replaces a worker that dies; meanwhile it serves, reports not ready, and still serves /metrics', async () => {
    const victim = Number(linesOf('gateway worker started')[0]!.pid);
    process.kill(victim, 'SIGKILL');
    const exited = await gateway.waitForLog((line) => line.msg === 'gateway worker exited; starting another');
    expect(exited).to.include({ pid: victim, signal: 'SIGKILL' });
    // The replacement is forked a second after the exit, so one worker serves for now.
    const readiness = await fetch(`${admin}/readyz`);
    expect(readiness.status).to.equal(503);
    expect(((await readiness.json()) as { checks: Record<string, string> }).checks).to.include({ workers: '1 of 2 workers serving' });
    const headers = { authorization: `Bearer ${replicaSecret('roomy')}` };
    expect((await fetch(`${url}/v1/pets?limit=1`, { headers })).status).to.equal(200);
    // A worker that is starting cannot answer for its metrics; the scrape leaves it out.
    await untilLogged('gateway worker started', 3);
    const scrape = await fetch(`${admin}/metrics`);
    expect(scrape.status).to.equal(200);
    expect(await scrape.text()).to.match(/^http_requests_total\{/m);
    // The replacement is a process start: bounded as one, not by a quiet machine's pace.
    await waitFor(async () => (await fetch(`${admin}/readyz`)).status === 200, STARTUP_TIMEOUT_MS);
    await untilLogged('gateway worker serving', 3);
  });

  it('drains every worker on SIGTERM, even with a replacement still starting, and exits 0', async () => {
    process.kill(Number(linesOf('gateway worker started')[1]!.pid), 'SIGKILL');
    await untilLogged('gateway worker started', 4);
    const code = await gateway.stop();
    expect(code).to.equal(0);
    const primaryStopped = () => linesOf('stopped').filter((line) => line.worker === undefined);
    await waitFor(async () => primaryStopped().length === 1, 5000);
    expect(primaryStopped()[0]).to.include({ code: 0 });
    expect(linesOf('shutdown outlived SHUTDOWN_TIMEOUT_MS; exiting')).to.deep.equal([]);
    expect(gateway.logs.filter((line) => typeof line.level !== 'number'), 'torn or interleaved lines').to.deep.equal([]);
    const errors = gateway.logs.filter((line) => (line.level as number) >= 50 && line.msg !== 'gateway worker exited; starting another');
    expect(errors).to.deep.equal([]);
  });
});
