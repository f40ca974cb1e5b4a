import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import { Socket } from 'node:net';
import { Redis } from 'ioredis';
import type { RedisTarget } from '../gateway/src/config';
import { checkAtStartup, connectRedis } from '../gateway/src/rate-limit/redis-connection';
import { ipSubject, keyPolicy, keySubject, unauthenticatedPolicy } from '../gateway/src/rate-limit/rate-limit-policy';
import { RedisRateLimiter } from '../gateway/src/rate-limit/redis-rate-limiter';
import { findRedisServer, type RedisServer, startRedisServer } from './support/redis-server';
import { pendingOrRequired } from './support/executables';
import { startProcessStack, type ProcessStack } from './support/process-stack';
import { waitFor } from './support/wait-for';

const ROOT = join(__dirname, '..');
const GATEWAY_PASSWORD = 'the-gateways-password';
const ADMIN_PASSWORD = 'the-administrators-password';

/**
 * Redis as the manifests run it: started by deploy/base/redis-start.sh, whose ACL file has no
 * default user, an administrator, and the gateways' user with deploy/base/redis-gateway.acl's rules.
 */
describe('Redis with ACL users, as the manifests start it: the gateway’s user can do what the limiter does and nothing else', function () {
  this.timeout(60_000);
  let dir: string;
  let redis: RedisServer;
  const url = (password = GATEWAY_PASSWORD): string => `redis://gateway:${password}@127.0.0.1:${redis.port}`;
  const admin = (): Redis => new Redis({ port: redis.port, host: '127.0.0.1', username: 'admin', password: ADMIN_PASSWORD, lazyConnect: true });

  before(async function () {
    const binary = findRedisServer() ?? pendingOrRequired(this, 'REQUIRE_REDIS', 'redis-server not found (install Debian package redis-server or set REDIS_SERVER_BIN)');
    dir = mkdtempSync(join(tmpdir(), 'redis-acl-'));
    // As the Secret mounts them: one file per key, no line break.
    writeFileSync(join(dir, 'gateway-password'), GATEWAY_PASSWORD);
    writeFileSync(join(dir, 'admin-password'), ADMIN_PASSWORD);
    redis = await startRedisServer(binary, undefined, {
      launcher: ['sh', join(ROOT, 'deploy', 'base', 'redis-start.sh')],
      env: {
        PATH: `${dirname(binary)}:${process.env.PATH}`,
        REDIS_CONFIG_DIR: join(ROOT, 'deploy', 'base'),
        REDIS_SECRETS_DIR: dir,
        REDIS_RUN_DIR: dir,
      },
    });
  });

  after(async () => {
    await redis?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  async function asAdmin<T>(use: (client: Redis) => Promise<T>): Promise<T> {
    const client = admin();
    await client.connect();
    try {
      return await use(client);
    } finally {
      client.disconnect();
    }
  }

  it('runs the limiter (key and address policies, usage, unban, the heartbeat) with nothing refused', async () => {
    await asAdmin((client) => client.call('ACL', 'LOG', 'RESET'));
    const target: RedisTarget = { kind: 'standalone', variable: 'REDIS_URL', url: url() };
    const client = connectRedis({ target, commandTimeoutMs: 2000 });
    const limiter = new RedisRateLimiter({ redis: client, now: Date.now });
    try {
      expect(await checkAtStartup(client, target, 5000)).to.deep.equal({ state: 'ready' });
      const policy = keyPolicy({ perMinute: 2, perDay: 100 }, { threshold: 1, seconds: 60 });
      const decisions = [];
      for (let i = 0; i < 5; i += 1) decisions.push(await limiter.consume(keySubject('acme'), policy));
      expect(decisions.map((decision) => decision.outcome)).to.deep.equal(['allowed', 'allowed', 'limited', 'banned', 'banned']);
      expect((await limiter.consume(ipSubject('192.0.2.1'), unauthenticatedPolicy(10))).outcome).to.equal('allowed');
      expect((await limiter.usage(keySubject('acme'), policy)).bannedUntil).to.be.a('number');
      expect(await limiter.unban(keySubject('acme'))).to.equal(true);
      expect((await limiter.beat('replica-1', Date.now(), 5000)).live).to.equal(1);
      await limiter.leave('replica-1');
      // EVAL, as ioredis sends it when the script is not cached (a restarted Redis).
      await asAdmin((admin) => admin.call('SCRIPT', 'FLUSH'));
      expect((await limiter.consume(keySubject('other'), policy)).outcome).to.equal('allowed');
      expect(await asAdmin((admin) => admin.call('ACL', 'LOG')), 'ACL denials').to.deep.equal([]);
    } finally {
      await limiter.close();
    }
  });

  it('refuses the gateway’s user every other command and key: FLUSHALL, CONFIG, KEYS, a script that flushes, a key outside {rl:…}', async () => {
    const client = new Redis(url(), { lazyConnect: true, maxRetriesPerRequest: 0 });
    await client.connect();
    try {
      const refusals: Array<[string, () => Promise<unknown>]> = [
        ['FLUSHALL', () => client.flushall()],
        ['FLUSHDB', () => client.flushdb()],
        ['CONFIG GET', () => client.config('GET', 'requirepass')],
        ['CONFIG SET', () => client.config('SET', 'maxmemory', '1')],
        ['KEYS', () => client.keys('*')],
        ['SCAN', () => client.scan(0)],
        ['ACL LIST', () => client.call('ACL', 'LIST')],
        ['SHUTDOWN', () => client.call('SHUTDOWN', 'NOSAVE')],
        ['SET outside {rl:}', () => client.set('session:1', 'x')],
        ['GET outside {rl:}', () => client.get('session:1')],
        ['a script that flushes', () => client.eval("return redis.call('FLUSHALL')", 0)],
        ['a script on a key outside {rl:}', () => client.eval("return redis.call('SET', KEYS[1], 'x')", 1, 'session:1')],
        ['PUBLISH', () => client.publish('news', 'x')],
      ];
      for (const [name, attempt] of refusals) {
        const error = await attempt().then(
          () => undefined,
          (caught: unknown) => caught as Error,
        );
        // A script's command is refused with another message than a command's (Redis 7.0).
        expect(error?.message, name).to.match(/^NOPERM |^ERR The user executing the script can't /);
      }
      expect(await client.set('{rl:key:acme}:probe', '1', 'PX', 1000), 'its own keys').to.equal('OK');
    } finally {
      client.disconnect();
    }
    expect(await anonymousReply(redis.port, 'GET {rl:key:acme}:probe'), 'no default user').to.match(/^-NOAUTH /);
  });

  describe('a gateway process on it', () => {
    let stack: ProcessStack;

    before(async () => {
      writeFileSync(join(dir, 'redis-url'), `${url()}\n`);
      stack = await startProcessStack({ gateway: { REDIS_URL_FILE: join(dir, 'redis-url'), REDIS_COMMAND_TIMEOUT_MS: '2000' } });
    });
    after(async () => {
      await asAdmin((client) => client.call('ACL', 'SETUSER', 'gateway', 'resetpass', `>${GATEWAY_PASSWORD}`, '+evalsha', '+incr'));
      await stack?.stop();
    });

    const status = async (): Promise<number> => {
      const response = await fetch(`${stack.baseUrl}/v1/pets?limit=1`, { headers: { Authorization: 'Bearer demo-free-key-0000' } });
      await response.arrayBuffer();
      return response.status;
    };
    const readiness = async (): Promise<{ status: string; checks: Record<string, string> }> =>
      (await (await fetch(`http://127.0.0.1:${stack.gateway.adminPort}/readyz`)).json()) as { status: string; checks: Record<string, string> };

    it('refuses to start with the wrong password, in one line naming REDIS_URL', async () => {
      writeFileSync(join(dir, 'wrong-url'), url('not-the-password'));
      const error = await startProcessStack({ gateway: { REDIS_URL_FILE: join(dir, 'wrong-url') } }).then(
        async (started) => {
          await started.stop();
          return undefined;
        },
        (caught: unknown) => caught as Error,
      );
      expect(error?.message).to.match(/invalid configuration: REDIS_URL: Redis refuses its credentials \(WRONGPASS /);
    });

    it('at run time, a password changed under it and a command taken away: serves, logs, counts, shows it in /readyz; then recovers', async () => {
      expect(await status()).to.equal(200);
      expect((await readiness()).checks.redis).to.equal('ok');
      await asAdmin(async (client) => {
        await client.call('ACL', 'SETUSER', 'gateway', 'resetpass', '>rotated-without-telling');
        await client.call('CLIENT', 'KILL', 'USER', 'gateway');
      });
      await waitFor(async () => (await status()) === 200 && /refuses its credentials \(WRONGPASS/.test((await readiness()).checks.redis ?? ''), 15_000);
      expect((await readiness()).status, 'readiness does not fail: every replica would leave at once').to.equal('ready');
      await asAdmin((client) => client.call('ACL', 'SETUSER', 'gateway', 'resetpass', `>${GATEWAY_PASSWORD}`, '-evalsha'));
      await waitFor(async () => (await status()) === 200 && /may not run the limiter's commands \(NOPERM/.test((await readiness()).checks.redis ?? ''), 15_000);
      // A command inside the script refused: Redis words that differently.
      await asAdmin((client) => client.call('ACL', 'SETUSER', 'gateway', '+evalsha', '-incr'));
      await waitFor(async () => (await status()) === 200 && /may not run the limiter's commands \(ERR The user executing the script/.test((await readiness()).checks.redis ?? ''), 15_000);
      await asAdmin((client) => client.call('ACL', 'SETUSER', 'gateway', '+incr'));
      await waitFor(async () => (await status()) === 200 && (await readiness()).checks.redis === 'ok', 15_000);
      // The gateway writes its log in batches: the third line may still be in its buffer.
      const errorLines = () => stack.gateway.logs.filter((line) => line.level === 50 && /limits are per replica until Redis is reconfigured/.test(String(line.msg)));
      await waitFor(() => errorLines().length >= 3, 5000, () => `error lines so far: ${JSON.stringify(errorLines())}`);
      expect(errorLines().map((line) => String(line.msg).replace(/ \(.*/, ''))).to.deep.equal([
        'rate limiter: limits are per replica until Redis is reconfigured: REDIS_URL: Redis refuses its credentials',
        "rate limiter: limits are per replica until Redis is reconfigured: REDIS_URL: the user may not run the limiter's commands",
        "rate limiter: limits are per replica until Redis is reconfigured: REDIS_URL: the user may not run the limiter's commands",
      ]);
      const metrics = await (await fetch(`http://127.0.0.1:${stack.gateway.adminPort}/metrics`)).text();
      expect(Number(/^rate_limiter_redis_misconfigurations_total (\d+)$/m.exec(metrics)?.[1])).to.be.at.least(3);
    });
  });
});

/** The first reply to `command` sent without authenticating, on a bare connection. */
function anonymousReply(port: number, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = new Socket();
    socket.once('error', reject);
    socket.connect(port, '127.0.0.1', () => socket.write(`${command}\r\n`));
    socket.once('data', (data) => {
      socket.destroy();
      resolve(data.toString());
    });
  });
}
