import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import pino from 'pino';
import { ApiKeyStore } from '../../src/keys/api-keys';
import { runKeysCli } from '../../src/keys/keys-cli';
import { createKeysFileReloader, type KeysFileReloader } from '../../src/keys/keys-file-reloader';
import { startTestStack, type TestStack } from '../../../system-test/support/test-stack';

const T0 = Date.parse('2030-05-01T08:00:00Z');
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/**
 * The lifecycle end to end in one process: the keys CLI edits a real file, the reloader puts it in
 * force, and requests go through a real gateway and pet service; one injected clock drives the
 * CLI's timestamps, the gateway's expiry checks and its rate-limit windows.
 */
describe('API key lifecycle through the gateway (injected clock)', function () {
  this.timeout(20_000);
  let dir: string;
  let file: string;
  let keys: KeysFileReloader;
  let stack: TestStack;
  let now = T0;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'key-lifecycle-'));
    file = join(dir, 'keys.yaml');
    writeFileSync(file, 'keys: []\n');
    // No poll: the tests reload explicitly, so that no assertion depends on a watch's timing.
    keys = createKeysFileReloader({ path: file, initial: ApiKeyStore.load(file), logger: pino({ level: 'silent' }), pollIntervalMs: 3_600_000 });
    stack = await startTestStack({ apiKeys: keys });
  });
  after(async () => {
    keys?.close();
    await stack?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const at = (time: number): void => {
    now = time;
    stack.setNow(time);
  };
  /** Runs `npm run keys -- <argv>` at the current time; resolves with what it printed on stdout. */
  const cli = async (...argv: string[]): Promise<string> => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runKeysCli(argv, {
      keysFile: file,
      unban: async () => 1,
      readUsage: () => Promise.reject(new Error('no shared store in this test')),
      out: (line) => out.push(line),
      err: (line) => err.push(line),
      now: () => now,
    });
    expect(code, err.join('\n')).to.equal(0);
    keys.reload('test');
    return out.join('\n');
  };
  const get = async (secret: string): Promise<{ status: number; message?: string; challenge: string | null; remaining: string | null }> => {
    const response = await fetch(`${stack.baseUrl}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${secret}` } });
    const body = (await response.json()) as { message?: string };
    return {
      status: response.status,
      message: body.message,
      challenge: response.headers.get('www-authenticate'),
      remaining: response.headers.get('x-ratelimit-remaining'),
    };
  };

  it('accepts the secret that create printed', async () => {
    at(T0);
    const secret = await cli('create', '--id', 'fresh', '--plan', 'pro');
    expect(await get(secret)).to.include({ status: 200 });
  });

  it('after rotate, accepts both secrets on one budget until the grace ends, then only the new one', async () => {
    at(T0);
    const old = await cli('create', '--id', 'rotating', '--plan', 'free');
    expect(await get(old)).to.include({ status: 200, remaining: '59' });
    at(T0 + MINUTE);
    const current = await cli('rotate', '--id', 'rotating', '--grace', '1h');
    expect(await get(old)).to.include({ status: 200, remaining: '59' });
    expect(await get(current)).to.include({ status: 200, remaining: '58' });

    at(T0 + MINUTE + HOUR - 1);
    expect(await get(old)).to.include({ status: 200 });
    at(T0 + MINUTE + HOUR);
    expect(await get(old)).to.deep.include({ status: 401, message: 'API key expired', challenge: 'Bearer realm="petstore", error="invalid_token"' });
    expect(await get(current)).to.include({ status: 200 });
  });

  it('refuses a key once it has expired, saying so', async () => {
    at(T0);
    const secret = await cli('create', '--id', 'short-lived', '--plan', 'free', '--expires', '2030-05-02T08:00:00Z');
    at(Date.parse('2030-05-02T08:00:00Z') - 1);
    expect(await get(secret)).to.include({ status: 200 });
    at(Date.parse('2030-05-02T08:00:00Z'));
    expect(await get(secret)).to.deep.include({ status: 401, message: 'API key expired', challenge: 'Bearer realm="petstore", error="invalid_token"' });
  });

  it('refuses a revoked key, saying so', async () => {
    at(T0);
    const secret = await cli('create', '--id', 'doomed', '--plan', 'free');
    expect(await get(secret)).to.include({ status: 200 });
    await cli('revoke', '--id', 'doomed');
    expect(await get(secret)).to.deep.include({ status: 401, message: 'API key revoked', challenge: 'Bearer realm="petstore", error="invalid_token"' });
  });

  it('refuses a secret with one character changed for its checksum', async () => {
    at(T0);
    const secret = await cli('create', '--id', 'typed', '--plan', 'free');
    const position = 30;
    const mistyped = secret.slice(0, position) + (secret[position] === 'x' ? 'y' : 'x') + secret.slice(position + 1);
    expect(await get(mistyped)).to.deep.include({
      status: 401,
      message: 'malformed API key: its checksum does not match (was it copied whole?)',
      challenge: 'Bearer realm="petstore", error="invalid_token"',
    });
    expect(await get(`pk_live_${'0'.repeat(49)}`)).to.include({ status: 401 });
    expect(await get(secret)).to.include({ status: 200 });
  });
});
