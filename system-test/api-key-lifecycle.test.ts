import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { ApiKeyStore } from '../gateway/src/keys/api-keys';
import { type KeysCliRun, runKeysCli } from './support/keys-cli';
import { type RedisServer, startRedisOrSkip } from './support/redis-server';
import { replicaSecret, type ReplicaSet, startReplicaSet } from './support/replica-set';
import { type ServiceProcess, startService } from './support/service-process';
import { promisedWithin, waitFor } from './support/wait-for';

/** The bound: a change to the keys file is in force on every gateway within this. */
const WITHIN_MS = 5000;
/** A bound on log lines reaching the test, which the product promises nothing about: their times are checked. */
const LOGGED_MS = 30_000;

interface Answer {
  readonly status: number;
  readonly message?: string;
}

async function ask(url: string, secret: string): Promise<Answer> {
  const response = await fetch(`${url}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${secret}` } });
  const body = (await response.json()) as { message?: string };
  return { status: response.status, message: body.message };
}

/** `count` requests at once, so that they open several connections and reach every worker. */
async function askAtOnce(url: string, secret: string, count: number): Promise<Answer[]> {
  return Promise.all(Array.from({ length: count }, () => ask(url, secret)));
}

async function metric(adminPort: number, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
  const escaped = `${name}${labels}`.replace(/[{}]/g, '\\$&');
  const match = new RegExp(`^${escaped} (\\S+)$`, 'm').exec(text);
  return match === null ? NaN : Number(match[1]);
}

describe('API key lifecycle across gateway processes: the keys CLI and hot reload', function () {
  this.timeout(90_000);
  let redis: RedisServer;
  let replicas: ReplicaSet;
  /** Two single-process gateways, and one with GATEWAY_WORKERS=2, all reading one keys file. */
  let workers: ServiceProcess;
  let env: NodeJS.ProcessEnv;

  before(async function () {
    redis = await startRedisOrSkip(this);
    replicas = await startReplicaSet(2, [{ id: 'steady', plan: 'enterprise', limits: { perMinute: 100_000, perDay: 1_000_000 } }], { REDIS_URL: redis.url });
    workers = await replicas.addGateway({ GATEWAY_WORKERS: '2' });
    env = { API_KEYS_FILE: replicas.keysFile, REDIS_URL: redis.url };
  });
  after(async () => {
    await replicas?.stop();
    await redis?.stop();
  });

  const keys = async (...args: string[]): Promise<KeysCliRun> => {
    const run = await runKeysCli(args, env);
    expect(run.status, run.stderr).to.equal(0);
    return run;
  };
  /** Every gateway gives `expected` for `secret` within the bound, counted from now. */
  const everywhereWithin = async (secret: string, expected: (answer: Answer) => boolean): Promise<void> => {
    await promisedWithin(async () => (await Promise.all(replicas.urls.map((url) => ask(url, secret)))).every(expected), WITHIN_MS);
  };
  /** The workers' lines `msg` (from the `since`th log line on) that `matches`. */
  const workerLines = (msg: string, since = 0, matches: (line: Record<string, unknown>) => boolean = () => true): Array<Record<string, unknown>> =>
    workers.logs.slice(since).filter((line) => line.msg === msg && matches(line));
  const workersThatLogged = (msg: string, since = 0, matches?: (line: Record<string, unknown>) => boolean): Set<unknown> =>
    new Set(workerLines(msg, since, matches).map((line) => line.worker));
  /**
   * Both workers logged `msg` after the `since`th line, each within WITHIN_MS of `changedAt` by its
   * own clock (pino's `time`): a line that reaches the test late says when the worker acted.
   */
  const bothWorkersWithin = async (msg: string, since: number, changedAt: number): Promise<void> => {
    await waitFor(() => workersThatLogged(msg, since).size === 2, LOGGED_MS, () => JSON.stringify(workerLines(msg, since)));
    for (const worker of [1, 2]) {
      const line = workerLines(msg, since).find((logged) => logged.worker === worker)!;
      expect(Number(line.time) - changedAt, `worker ${worker}: ${msg}`).to.be.at.most(WITHIN_MS);
    }
  };

  it('accepts the key `npm run keys -- create` printed on every gateway within 5 s, with no restart', async () => {
    const since = workers.logs.length;
    const { stdout: secret } = await keys('create', '--id', 'new-customer', '--plan', 'pro', '--env', 'test');
    const changedAt = Date.now();
    expect(secret).to.match(/^pk_test_[0-9A-Za-z]{49}$/);
    await everywhereWithin(secret, (answer) => answer.status === 200);
    // One request to the third gateway reached one of its workers: the other may reload a moment later.
    await bothWorkersWithin('API keys reloaded', since, changedAt);
    expect((await askAtOnce(replicas.urls[2]!, secret, 20)).map((answer) => answer.status)).to.deep.equal(Array(20).fill(200));
  });

  it('refuses a revoked key within 5 s on two processes and on both workers of a third, saying it is revoked', async () => {
    const { stdout: secret } = await keys('create', '--id', 'leaked', '--plan', 'free');
    await everywhereWithin(secret, (answer) => answer.status === 200);
    const since = workers.logs.length;
    await keys('revoke', '--id', 'leaked');
    const changedAt = Date.now();
    await everywhereWithin(secret, (answer) => answer.status === 401 && answer.message === 'API key revoked');
    await bothWorkersWithin('API keys reloaded', since, changedAt);
    const answers = await askAtOnce(replicas.urls[2]!, secret, 20);
    expect(answers).to.deep.equal(Array(20).fill({ status: 401, message: 'API key revoked' }));
    expect((await ask(replicas.urls[0]!, replicaSecret('steady'))).status).to.equal(200);
  });

  it('keeps the old keys in force when a corrupt file is written, and counts the failed reload', async () => {
    const good = readFileSync(replicas.keysFile, 'utf8');
    const admins = replicas.gateways.map((gateway) => gateway.adminPort);
    const failures = (port: number) => metric(port, 'api_keys_reloads_total', '{outcome="failure"}');
    const before = await Promise.all(admins.map(failures));
    const since = workers.logs.length;
    expect(before.every((count) => count >= 0)).to.equal(true);
    writeFileSync(replicas.keysFile, `${good.slice(0, good.length / 2)}\n  - [broken\n`);
    const changedAt = Date.now();
    try {
      await promisedWithin(async () => (await Promise.all(admins.map(failures))).every((count, index) => count > before[index]!), WITHIN_MS);
      const answers = await Promise.all(replicas.urls.map((url) => ask(url, replicaSecret('steady'))));
      expect(answers.map((answer) => answer.status)).to.deep.equal([200, 200, 200]);
      expect((await askAtOnce(replicas.urls[2]!, replicaSecret('steady'), 20)).every((answer) => answer.status === 200)).to.equal(true);
      const rejected = 'API keys file rejected; the last good keys stay in force';
      await bothWorkersWithin(rejected, since, changedAt);
      expect(workers.logs.slice(since).find((line) => line.msg === rejected)!.reason).to.match(/^API_KEYS_FILE \S+keys\.yaml: /);
    } finally {
      writeFileSync(replicas.keysFile, good);
    }
  });

  it('rereads the file in every worker on SIGHUP to the primary, which keeps serving', async () => {
    const sighup = (line: Record<string, unknown>) => line.trigger === 'SIGHUP';
    expect(workersThatLogged('API keys reloaded', 0, sighup).size).to.equal(0);
    workers.child.kill('SIGHUP');
    replicas.gateways[0]!.child.kill('SIGHUP');
    await waitFor(async () => workersThatLogged('API keys reloaded', 0, sighup).size === 2, LOGGED_MS);
    await replicas.gateways[0]!.waitForLog((line) => line.msg === 'API keys reloaded' && line.trigger === 'SIGHUP', LOGGED_MS);
    expect(workers.child.exitCode).to.equal(null);
    expect((await ask(replicas.urls[2]!, replicaSecret('steady'))).status).to.equal(200);
  });

  it('loses no entry to 20 keys CLI processes writing at once', async () => {
    const runs = await Promise.all(Array.from({ length: 20 }, (_, index) => runKeysCli(['create', '--id', `bulk-${index}`, '--plan', 'free'], env, 'direct')));
    expect(runs.map((run) => run.status), runs.map((run) => run.stderr).join('')).to.deep.equal(Array(20).fill(0));
    const store = ApiKeyStore.load(replicas.keysFile);
    runs.forEach((run, index) => expect(store.identify(run.stdout, Date.now())).to.include({ id: `bulk-${index}` }));
    const listed = JSON.parse((await keys('list', '--json')).stdout) as Array<{ id: string }>;
    expect(listed.filter((key) => key.id.startsWith('bulk-'))).to.have.length(20);
    await everywhereWithin(runs[19]!.stdout, (answer) => answer.status === 200);
  });

  describe('with the keys file mounted from a Kubernetes Secret', () => {
    let mount: string;
    let gateway: ServiceProcess;
    let version = 0;

    /** What the kubelet does on a Secret update: a new timestamped directory, `..data` swapped to it by a rename. */
    const kubeletUpdate = (keysFile: string): void => {
      version += 1;
      const next = `..2030_01_01_00_00_0${version}.${version}`;
      mkdirSync(join(mount, next));
      copyFileSync(keysFile, join(mount, next, 'keys.yaml'));
      symlinkSync(next, join(mount, '..data_tmp'));
      renameSync(join(mount, '..data_tmp'), join(mount, '..data'));
      rmSync(join(mount, `..2030_01_01_00_00_0${version - 1}.${version - 1}`), { recursive: true });
    };

    before(async () => {
      mount = mkdtempSync(join(tmpdir(), 'secret-volume-'));
      mkdirSync(join(mount, '..2030_01_01_00_00_00.0'));
      copyFileSync(replicas.keysFile, join(mount, '..2030_01_01_00_00_00.0', 'keys.yaml'));
      symlinkSync('..2030_01_01_00_00_00.0', join(mount, '..data'));
      symlinkSync(join('..data', 'keys.yaml'), join(mount, 'keys.yaml'));
      gateway = await startService('gateway', { API_KEYS_FILE: join(mount, 'keys.yaml'), PET_SERVICE_ADDR: `127.0.0.1:${replicas.petService.port}` });
    });
    after(async () => {
      await gateway?.stop();
      rmSync(mount, { recursive: true, force: true });
    });

    it('follows each update of the Secret within 5 s: the operator edits a copy with the CLI, the kubelet swaps it in', async () => {
      const url = `http://127.0.0.1:${gateway.port}`;
      const work = join(mkdtempSync(join(tmpdir(), 'operator-')), 'keys.yaml');
      copyFileSync(replicas.keysFile, work);
      const operator = { ...env, API_KEYS_FILE: work };
      const created = await runKeysCli(['create', '--id', 'k8s-customer', '--plan', 'free'], operator);
      expect(created.status, created.stderr).to.equal(0);
      expect((await ask(url, created.stdout)).status).to.equal(401);

      kubeletUpdate(work);
      await promisedWithin(async () => (await ask(url, created.stdout)).status === 200, WITHIN_MS);

      expect((await runKeysCli(['revoke', '--id', 'k8s-customer'], operator)).status).to.equal(0);
      kubeletUpdate(work);
      await promisedWithin(async () => (await ask(url, created.stdout)).message === 'API key revoked', WITHIN_MS);
      expect((await ask(url, replicaSecret('steady'))).status).to.equal(200);
    });
  });
});
