import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { parse as parseYaml } from 'yaml';
import { type ApiKey, ApiKeyStore, sha256Hex } from '../../../src/keys/api-keys';
import { runKeysCli } from '../../../src/keys/keys-cli';
import { readUsageReport } from '../../../src/keys/key-usage';
import { MemoryRateLimiter } from '../../../src/rate-limit/memory-rate-limiter';
import { keyPolicy, keySubject } from '../../../src/rate-limit/rate-limit-policy';

const T0 = Date.parse('2030-03-01T10:00:00Z');
const HOUR = 3_600_000;
const SECRET = /^pk_live_[0-9A-Za-z]{49}$/;

interface Run {
  readonly code: number;
  readonly out: string;
  readonly err: string;
  readonly unbanned: string[];
}

/** Ban settings of the usage tests: the third refusal within a blocked window bans. */
const BAN = { threshold: 2, seconds: 900 };

describe('keys CLI', () => {
  let dir: string;
  let file: string;
  /** The store `usage` reads: Redis in production (system-test/key-usage.test.ts); the figures are the same. */
  let limiter: MemoryRateLimiter;
  let usageAvailable: boolean;

  beforeEach(() => {
    limiter = new MemoryRateLimiter({ now: () => T0 });
    usageAvailable = true;
    dir = mkdtempSync(join(tmpdir(), 'keys-cli-'));
    file = join(dir, 'keys.yaml');
    writeFileSync(file, `# production keys\nkeys:\n  - id: legacy\n    sha256: ${sha256Hex('legacy-secret')}\n    plan: free\n`);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** `keysFile` null: API_KEYS_FILE unset. */
  const keys = async (argv: string[], now = T0, keysFile: string | null = file): Promise<Run> => {
    const out: string[] = [];
    const err: string[] = [];
    const unbanned: string[] = [];
    const code = await runKeysCli(argv, {
      keysFile: keysFile ?? undefined,
      unban: async (keyId) => {
        unbanned.push(keyId);
        return 0;
      },
      readUsage: async (keys) => {
        if (!usageAvailable) throw new Error('REDIS_URL is not set');
        return readUsageReport({ limiter, keys, ban: BAN, scope: 'shared', now: () => now });
      },
      out: (line) => out.push(line),
      err: (line) => err.push(line),
      now: () => now,
    });
    return { code, out: out.join('\n'), err: err.join('\n'), unbanned };
  };
  const entries = (): Array<Record<string, unknown>> => (parseYaml(readFileSync(file, 'utf8')) as { keys: Array<Record<string, unknown>> }).keys;
  const identify = (secret: string, now: number) => ApiKeyStore.load(file).identify(secret, now);
  const create = async (...argv: string[]): Promise<string> => {
    const run = await keys(['create', ...argv]);
    expect(run.code, run.err).to.equal(0);
    return run.out;
  };

  describe('create', () => {
    it('prints the secret alone on stdout, once, and stores only its digest, with last 4, creation time and environment', async () => {
      const run = await keys(['create', '--id', 'acme', '--plan', 'pro']);
      expect(run.code).to.equal(0);
      expect(run.out).to.match(SECRET);
      expect(run.err).to.include('created key acme').and.not.include(run.out);
      const text = readFileSync(file, 'utf8');
      expect(text).to.not.include(run.out);
      expect(text).to.not.include(run.out.slice(8, -6));
      expect(entries()[1]).to.deep.equal({
        id: 'acme',
        sha256: sha256Hex(run.out),
        plan: 'pro',
        env: 'live',
        last4: run.out.slice(-4),
        created: '2030-03-01T10:00:00.000Z',
      });
      expect(identify(run.out, T0)).to.deep.include({ id: 'acme', plan: 'pro' });
    });

    it('issues test keys, custom limits and an expiry on request', async () => {
      const secret = await create('--id', 'big', '--plan', 'enterprise', '--per-minute', '5000', '--per-day', '2000000', '--expires', '2030-04-01', '--env', 'test');
      expect(secret).to.match(/^pk_test_/);
      expect(entries()[1]).to.deep.include({ limits: { perMinute: 5000, perDay: 2000000 }, expires: '2030-04-01T00:00:00.000Z', env: 'test' });
      expect((identify(secret, T0) as ApiKey).limits).to.deep.equal({ perMinute: 5000, perDay: 2000000 });
      expect(identify(secret, Date.parse('2030-04-01T00:00:00Z'))).to.equal('expired');
    });

    it('creates the file when there is none', async () => {
      rmSync(file);
      const secret = await create('--id', 'first', '--plan', 'free');
      expect(entries().map((entry) => entry.id)).to.deep.equal(['first']);
      expect(identify(secret, T0)).to.include({ id: 'first' });
    });

    it('writes a JSON keys file as JSON', async () => {
      file = join(dir, 'keys.json');
      writeFileSync(file, JSON.stringify({ keys: [] }));
      await create('--id', 'j', '--plan', 'free');
      expect((JSON.parse(readFileSync(file, 'utf8')) as { keys: Array<{ id: string }> }).keys[0]!.id).to.equal('j');
    });
  });

  const badArguments: Array<[string, string[], RegExp]> = [
    ['no command', [], /a command is needed/],
    ['an unknown command', ['delete', '--id', 'legacy'], /unknown command "delete"/],
    ['an unknown option', ['create', '--id', 'a', '--plan', 'free', '--colour', 'red'], /Unknown option '--colour'/],
    ['a positional argument', ['revoke', 'legacy'], /Unexpected argument 'legacy'/],
    ['an option without its value', ['create', '--plan', 'free', '--id'], /--id <value>' argument missing/],
    ['no id', ['create', '--plan', 'free'], /--id is required/],
    ['a bad id', ['create', '--id', 'has space', '--plan', 'free'], /--id must be 1 to 64 letters/],
    ['no plan', ['create', '--id', 'a'], /--plan is required/],
    ['an unknown plan', ['create', '--id', 'a', '--plan', 'gold'], /--plan must be one of free, pro, business, enterprise/],
    ['a limit that is no positive integer', ['create', '--id', 'a', '--plan', 'free', '--per-day', '1.5'], /--per-day must be a positive integer/],
    ['an enterprise key without limits', ['create', '--id', 'a', '--plan', 'enterprise', '--per-minute', '5'], /enterprise needs --per-minute and --per-day/],
    ['an expiry that is no date', ['create', '--id', 'a', '--plan', 'free', '--expires', 'tomorrow'], /--expires must be an ISO 8601 date/],
    ['an expiry in the past', ['create', '--id', 'a', '--plan', 'free', '--expires', '2030-03-01'], /--expires must be in the future/],
    ['an unknown environment', ['create', '--id', 'a', '--plan', 'free', '--env', 'prod'], /--env must be one of live, test/],
    ['an id that exists', ['create', '--id', 'legacy', '--plan', 'free'], /key "legacy" already exists/],
    ['revoking an unknown id', ['revoke', '--id', 'nobody'], /no key "nobody"/],
    ['rotating an unknown id', ['rotate', '--id', 'nobody'], /no key "nobody"/],
    ['a grace that is no duration', ['rotate', '--id', 'legacy', '--grace', '1 hour'], /--grace must be a number and a unit/],
    ['unban without an id', ['unban'], /--id is required/],
  ];
  for (const [what, argv, message] of badArguments) {
    it(`exits 2 with a clear message, and changes nothing, for ${what}`, async () => {
      const before = readFileSync(file, 'utf8');
      const run = await keys(argv);
      expect(run.code).to.equal(2);
      expect(run.err).to.match(message);
      expect(run.err).to.match(/usage: npm run keys -- /);
      expect(run.out).to.equal('');
      expect(readFileSync(file, 'utf8')).to.equal(before);
    });
  }

  for (const command of ['create', 'list', 'revoke', 'rotate', 'unban']) {
    it(`explains ${command} with --help`, async () => {
      const run = await keys([command, '--help']);
      expect(run.code).to.equal(0);
      expect(run.out).to.match(new RegExp(`^usage: npm run keys -- ${command} `));
      expect(run.unbanned).to.deep.equal([]);
    });
  }

  it('lists every command with --help', async () => {
    const run = await keys(['--help']);
    expect(run.code).to.equal(0);
    for (const command of ['create', 'list', 'revoke', 'rotate', 'unban']) expect(run.out).to.match(new RegExp(`^  ${command} `, 'm'));
  });

  it('exits 1 and names API_KEYS_FILE when it is not set', async () => {
    const run = await keys(['list'], T0, null);
    expect(run.code).to.equal(1);
    expect(run.err).to.match(/API_KEYS_FILE is not set/);
  });

  describe('list', () => {
    it('shows id, plan, limits, created, expires, revoked, status and last 4, never a secret', async () => {
      const secret = await create('--id', 'acme', '--plan', 'business', '--expires', '2030-03-02');
      await keys(['revoke', '--id', 'legacy']);
      const run = await keys(['list'], T0 + 25 * HOUR);
      expect(run.code).to.equal(0);
      expect(run.out).to.not.include(secret.slice(8, -4));
      const [header, legacy, acme] = run.out.split('\n');
      expect(header!.split(/ {2,}/)).to.deep.equal(['ID', 'PLAN', 'PER MINUTE', 'PER DAY', 'CREATED', 'EXPIRES', 'REVOKED', 'STATUS', 'LAST 4', 'OLD SECRETS (LAST 4 UNTIL)']);
      expect(legacy!.split(/ +/)).to.deep.equal(['legacy', 'free', '60', '1000', '-', '-', '2030-03-01T10:00:00.000Z', 'revoked', '-', '-']);
      expect(acme!.split(/ +/)).to.deep.equal([
        'acme', 'business', '1000', '100000', '2030-03-01T10:00:00.000Z', '2030-03-02T00:00:00.000Z', '-', 'expired', secret.slice(-4), '-',
      ]);
    });

    it('prints JSON with --json', async () => {
      const secret = await create('--id', 'acme', '--plan', 'pro');
      const run = await keys(['list', '--json']);
      expect(run.out).to.not.include(secret.slice(8, -4));
      expect(JSON.parse(run.out)).to.deep.equal([
        { id: 'legacy', plan: 'free', limits: { perMinute: 60, perDay: 1000 }, created: null, expires: null, revoked: null, status: 'active', last4: null, previous: [] },
        {
          id: 'acme',
          plan: 'pro',
          limits: { perMinute: 300, perDay: 10000 },
          created: '2030-03-01T10:00:00.000Z',
          expires: null,
          revoked: null,
          status: 'active',
          last4: secret.slice(-4),
          previous: [],
        },
      ]);
    });
  });

  describe('revoke', () => {
    it('marks the key revoked with the time, once', async () => {
      const secret = await create('--id', 'acme', '--plan', 'pro');
      const run = await keys(['revoke', '--id', 'acme'], T0 + HOUR);
      expect(run.code).to.equal(0);
      expect(entries()[1]).to.include({ revoked: '2030-03-01T11:00:00.000Z' });
      expect(identify(secret, T0 + HOUR)).to.equal('revoked');
      const again = await keys(['revoke', '--id', 'acme'], T0 + 2 * HOUR);
      expect(again.code).to.equal(0);
      expect(again.err).to.include('already revoked, at 2030-03-01T11:00:00.000Z');
      expect(entries()[1]).to.include({ revoked: '2030-03-01T11:00:00.000Z' });
    });
  });

  describe('rotate', () => {
    it('issues a new secret for the same key; the old one works until the grace period ends', async () => {
      const old = await create('--id', 'acme', '--plan', 'pro', '--env', 'test');
      const run = await keys(['rotate', '--id', 'acme', '--grace', '2h'], T0 + HOUR);
      expect(run.code).to.equal(0);
      expect(run.out).to.match(/^pk_test_[0-9A-Za-z]{49}$/);
      expect(run.err).to.include('the previous secret works until 2030-03-01T13:00:00.000Z');
      expect(entries()[1]).to.deep.include({
        sha256: sha256Hex(run.out),
        last4: run.out.slice(-4),
        previous: [{ sha256: sha256Hex(old), expires: '2030-03-01T13:00:00.000Z', last4: old.slice(-4) }],
      });
      expect(identify(old, T0 + 3 * HOUR - 1)).to.include({ id: 'acme' });
      expect(identify(old, T0 + 3 * HOUR)).to.equal('expired');
      expect(identify(run.out, T0 + 3 * HOUR)).to.include({ id: 'acme' });
    });

    it('ends the old secret at once with --grace 0s, and drops secrets whose grace is over', async () => {
      const first = await create('--id', 'acme', '--plan', 'pro');
      const second = (await keys(['rotate', '--id', 'acme', '--grace', '1h'])).out;
      const third = (await keys(['rotate', '--id', 'acme', '--grace', '0s'], T0 + 2 * HOUR)).out;
      expect(entries()[1]).to.not.have.property('previous');
      expect(identify(first, T0 + 2 * HOUR)).to.equal('unknown');
      expect(identify(second, T0 + 2 * HOUR)).to.equal('unknown');
      expect(identify(third, T0 + 2 * HOUR)).to.include({ id: 'acme' });
    });

    it('refuses a revoked key, and gives a legacy key its first issued secret', async () => {
      await create('--id', 'acme', '--plan', 'pro');
      await keys(['revoke', '--id', 'acme']);
      const revoked = await keys(['rotate', '--id', 'acme']);
      expect(revoked.code).to.equal(2);
      expect(revoked.err).to.include('key "acme" is revoked');
      const legacy = await keys(['rotate', '--id', 'legacy']);
      expect(legacy.out).to.match(SECRET);
      expect(identify('legacy-secret', T0)).to.include({ id: 'legacy' });
      expect(identify('legacy-secret', T0 + 24 * HOUR)).to.equal('expired');
    });
  });

  it('keeps comments, and fields and entries it does not know', async () => {
    writeFileSync(
      file,
      [
        '# production keys: edited by the keys CLI',
        'owner: billing-team',
        'keys:',
        '  - id: legacy',
        `    sha256: ${sha256Hex('legacy-secret')}`,
        '    plan: free # the first customer',
        '    customer: { name: Acme, contract: 42 }',
        '',
      ].join('\n'),
    );
    await create('--id', 'acme', '--plan', 'pro');
    await keys(['rotate', '--id', 'legacy']);
    await keys(['revoke', '--id', 'acme']);
    const text = readFileSync(file, 'utf8');
    expect(text).to.match(/^# production keys: edited by the keys CLI\nowner: billing-team\n/);
    expect(text).to.include('plan: free # the first customer');
    expect(entries()[0]).to.deep.include({ customer: { name: 'Acme', contract: 42 } });
  });

  it('refuses, with exit 1, to edit a file the gateway rejects, and leaves it as it is', async () => {
    const broken = 'keys:\n  - id: x\n    sha256: nope\n    plan: free\n';
    writeFileSync(file, broken);
    const run = await keys(['create', '--id', 'acme', '--plan', 'pro']);
    expect(run.code).to.equal(1);
    expect(run.err).to.match(/refusing to edit a file the gateway rejects: API_KEYS_FILE \S+keys\.yaml: key "x": sha256/);
    expect(run.out).to.equal('');
    expect(readFileSync(file, 'utf8')).to.equal(broken);
  });

  it('loses no entry to 20 commands run at once, and leaves no lock or temporary file', async () => {
    const runs = await Promise.all(Array.from({ length: 20 }, (_, index) => keys(['create', '--id', `k${index}`, '--plan', 'free'])));
    expect(runs.map((run) => run.code)).to.deep.equal(Array(20).fill(0));
    const store = ApiKeyStore.load(file);
    expect(store.records.map((record) => record.key.id).sort()).to.deep.equal(['legacy', ...Array.from({ length: 20 }, (_, index) => `k${index}`)].sort());
    runs.forEach((run, index) => expect(store.identify(run.out, T0)).to.include({ id: `k${index}` }));
    expect(readdirSync(dir)).to.deep.equal(['keys.yaml']);
  });

  it('unban passes the id to the configured store', async () => {
    const run = await keys(['unban', '--id', 'acme']);
    expect(run.code).to.equal(0);
    expect(run.unbanned).to.deep.equal(['acme']);
  });

  describe('usage', () => {
    const spend = async (id: string, limits: { perMinute: number; perDay: number }, times: number): Promise<string[]> => {
      const outcomes: string[] = [];
      for (let i = 0; i < times; i += 1) outcomes.push((await limiter.consume(keySubject(id), keyPolicy(limits, BAN))).outcome);
      return outcomes;
    };

    it('prints, as JSON, each key\'s plan, used and remaining per window, their resets and its ban', async () => {
      await create('--id', 'acme', '--plan', 'enterprise', '--per-minute', '2', '--per-day', '5');
      expect(await spend('acme', { perMinute: 2, perDay: 5 }, 3)).to.deep.equal(['allowed', 'allowed', 'limited']);
      expect(await spend('legacy', { perMinute: 60, perDay: 1000 }, 1)).to.deep.equal(['allowed']);
      const run = await keys(['usage', '--json']);
      expect(run.code, run.err).to.equal(0);
      expect(JSON.parse(run.out)).to.deep.equal({
        scope: 'replica',
        at: '2030-03-01T10:00:00.000Z',
        keys: [
          {
            id: 'legacy',
            plan: 'free',
            minute: { limit: 60, used: 1, remaining: 59, resetsAt: '2030-03-01T10:01:00.000Z' },
            day: { limit: 1000, used: 1, remaining: 999, resetsAt: '2030-03-02T00:00:00.000Z' },
            banned: false,
            bannedUntil: null,
          },
          {
            id: 'acme',
            plan: 'enterprise',
            minute: { limit: 2, used: 2, remaining: 0, resetsAt: '2030-03-01T10:01:00.000Z' },
            day: { limit: 5, used: 2, remaining: 3, resetsAt: '2030-03-02T00:00:00.000Z' },
            banned: false,
            bannedUntil: null,
          },
        ],
      });
    });

    it('shows one key with --id, banned and until when, as a table by default', async () => {
      expect(await spend('legacy', { perMinute: 1, perDay: 1000 }, 4)).to.deep.equal(['allowed', 'limited', 'limited', 'banned']);
      const json = JSON.parse((await keys(['usage', '--id', 'legacy', '--json'])).out) as { keys: Array<Record<string, unknown>> };
      expect(json.keys.map((key) => [key.id, key.banned, key.bannedUntil])).to.deep.equal([['legacy', true, '2030-03-01T10:15:00.000Z']]);
      const table = await keys(['usage', '--id', 'legacy']);
      expect(table.code).to.equal(0);
      const [heading, row, ...rest] = table.out.split('\n');
      expect(rest).to.deep.equal([]);
      expect(heading!.split(/ {2,}/)).to.deep.equal(['ID', 'PLAN', 'MINUTE USED', 'LEFT', 'MINUTE RESETS', 'DAY USED', 'LEFT', 'DAY RESETS', 'BANNED UNTIL']);
      expect(row!.split(/ {2,}/)).to.deep.equal([
        'legacy',
        'free',
        '1/60',
        '59',
        '2030-03-01T10:01:00.000Z',
        '1/1000',
        '999',
        '2030-03-02T00:00:00.000Z',
        '2030-03-01T10:15:00.000Z',
      ]);
      expect(table.err).to.equal('read at 2030-03-01T10:00:00.000Z from the counters of one replica only');
    });

    it('refuses an unknown key with exit code 2, and reports a store it cannot read with 1', async () => {
      const unknown = await keys(['usage', '--id', 'nobody']);
      expect(unknown.code).to.equal(2);
      expect(unknown.err).to.match(/no key "nobody"/);
      usageAvailable = false;
      const failed = await keys(['usage']);
      expect(failed.code).to.equal(1);
      expect(failed.err).to.equal('keys usage: REDIS_URL is not set');
    });
  });
});
