import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { type ApiKey, ApiKeyStore, type KeyRefusal, sha256Hex } from '../../../src/keys/api-keys';
import { generateSecret } from '../../../src/keys/api-key-secret';

const digest = (secret: string) => sha256Hex(secret);
const NOW = Date.parse('2030-06-01T12:00:00Z');

/** The key a store accepts for `secret` now, or why not. */
function lookup(store: ApiKeyStore, secret: string, now = NOW): ApiKey | KeyRefusal {
  return store.identify(secret, now);
}
const idOf = (found: ApiKey | KeyRefusal) => (typeof found === 'string' ? found : found.id);

describe('ApiKeyStore', () => {
  it('finds a key by its secret and applies plan limits and overrides', () => {
    const store = ApiKeyStore.fromDocument({
      keys: [
        { id: 'a', sha256: digest('sa'), plan: 'free' },
        { id: 'b', sha256: digest('sb'), plan: 'pro', limits: { perMinute: 5 } },
        { id: 'c', sha256: digest('sc'), plan: 'enterprise', limits: { perMinute: 5000, perDay: 2000000 } },
      ],
    });
    expect(lookup(store, 'sa')).to.deep.equal({ id: 'a', plan: 'free', limits: { perMinute: 60, perDay: 1000 } });
    expect(lookup(store, 'sb')).to.deep.equal({ id: 'b', plan: 'pro', limits: { perMinute: 5, perDay: 10000 } });
    expect((lookup(store, 'sc') as ApiKey).limits).to.deep.equal({ perMinute: 5000, perDay: 2000000 });
    expect(lookup(store, 'nope')).to.equal('unknown');
    expect(lookup(store, digest('sa'))).to.equal('unknown');
  });

  const bad: Array<[string, unknown, RegExp]> = [
    ['no keys list', {}, /"keys" list/],
    ['unknown plan', { keys: [{ id: 'x', sha256: digest('1'), plan: 'gold' }] }, /key "x": plan/],
    ['malformed digest', { keys: [{ id: 'x', sha256: 'abc', plan: 'free' }] }, /key "x": sha256/],
    ['uppercase digest', { keys: [{ id: 'x', sha256: digest('1').toUpperCase(), plan: 'free' }] }, /key "x": sha256/],
    ['bad id', { keys: [{ id: 'has space', sha256: digest('1'), plan: 'free' }] }, /keys\[0\]: id/],
    [
      'duplicate id',
      { keys: [{ id: 'x', sha256: digest('1'), plan: 'free' }, { id: 'x', sha256: digest('2'), plan: 'free' }] },
      /key "x": duplicate id/,
    ],
    [
      'duplicate digest',
      { keys: [{ id: 'x', sha256: digest('1'), plan: 'free' }, { id: 'y', sha256: digest('1'), plan: 'free' }] },
      /key "y": duplicate sha256/,
    ],
    ['enterprise without limits', { keys: [{ id: 'e', sha256: digest('1'), plan: 'enterprise' }] }, /key "e": enterprise/],
    [
      'enterprise with half the limits',
      { keys: [{ id: 'e', sha256: digest('1'), plan: 'enterprise', limits: { perMinute: 5 } }] },
      /key "e": limits.perDay/,
    ],
    ['a bad expiry', { keys: [{ id: 'x', sha256: digest('1'), plan: 'free', expires: 'next week' }] }, /key "x": expires must be an ISO 8601/],
    ['a revocation that is no time', { keys: [{ id: 'x', sha256: digest('1'), plan: 'free', revoked: true }] }, /key "x": revoked must be an ISO 8601/],
    ['an unknown environment', { keys: [{ id: 'x', sha256: digest('1'), plan: 'free', env: 'prod' }] }, /key "x": env must be one of live, test/],
    [
      'a previous secret without its end of grace',
      { keys: [{ id: 'x', sha256: digest('1'), plan: 'free', previous: [{ sha256: digest('0') }] }] },
      /key "x": previous\[0\]: expires is required/,
    ],
    [
      'a previous secret that is also a current one',
      {
        keys: [
          { id: 'x', sha256: digest('1'), plan: 'free' },
          { id: 'y', sha256: digest('2'), plan: 'free', previous: [{ sha256: digest('1'), expires: '2030-01-01' }] },
        ],
      },
      /key "y": duplicate sha256/,
    ],
    ['zero limit', { keys: [{ id: 'z', sha256: digest('1'), plan: 'free', limits: { perDay: 0 } }] }, /key "z": limits.perDay/],
  ];
  for (const [what, document, error] of bad) {
    it(`refuses a keys file with ${what}, naming the entry`, () => {
      expect(() => ApiKeyStore.fromDocument(document)).to.throw(error);
    });
  }

  it('loads YAML and JSON files, and names an unreadable one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'keys-'));
    writeFileSync(join(dir, 'k.yaml'), `keys:\n  - id: y\n    sha256: ${digest('s')}\n    plan: business\n`);
    writeFileSync(join(dir, 'k.json'), JSON.stringify({ keys: [{ id: 'j', sha256: digest('s'), plan: 'free' }] }));
    expect(idOf(lookup(ApiKeyStore.load(join(dir, 'k.yaml')), 's'))).to.equal('y');
    expect(idOf(lookup(ApiKeyStore.load(join(dir, 'k.json')), 's'))).to.equal('j');
    expect(() => ApiKeyStore.load(join(dir, 'missing.yaml'))).to.throw(/API_KEYS_FILE .*missing\.yaml/);
  });

  it('names a YAML syntax error in one line, with its place in the file', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'keys-')), 'broken.yaml');
    writeFileSync(file, 'keys:\n  - id: y\n   plan: [free\n');
    expect(() => ApiKeyStore.load(file)).to.throw(/^API_KEYS_FILE \S+broken\.yaml: [^\n]+ at line 3, column 1$/);
  });

  it('prefixes the errors of every entry with API_KEYS_FILE and the path', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'keys-')), 'gold.yaml');
    writeFileSync(file, `keys:\n  - id: g\n    sha256: ${digest('s')}\n    plan: gold\n`);
    expect(() => ApiKeyStore.load(file)).to.throw(/^API_KEYS_FILE \S+gold\.yaml: key "g": plan must be one of/);
  });

  it('loads the demo keys shipped for npm start', () => {
    const store = ApiKeyStore.load(join(__dirname, '..', '..', '..', 'config', 'demo-keys.yaml'));
    expect((lookup(store, 'demo-free-key-0000') as ApiKey).plan).to.equal('free');
    expect((lookup(store, 'demo-enterprise-key-0000') as ApiKey).plan).to.equal('enterprise');
  });

  describe('lifecycle fields', () => {
    const store = ApiKeyStore.fromDocument({
      keys: [
        { id: 'dated', sha256: digest('dated'), plan: 'free', expires: '2030-06-01T12:00:00Z', created: '2030-01-01T00:00:00Z' },
        { id: 'gone', sha256: digest('gone'), plan: 'free', revoked: '2030-05-01T00:00:00Z', previous: [{ sha256: digest('gone-old'), expires: '2031-01-01' }] },
        {
          id: 'rotated',
          sha256: digest('new'),
          plan: 'pro',
          expires: '2030-06-01T13:00:00Z',
          previous: [
            { sha256: digest('old'), expires: '2030-06-01T12:30:00Z', last4: 'abcd' },
            { sha256: digest('older'), expires: '2030-07-01' },
          ],
          someFieldOfTheFuture: { kept: true },
        },
      ],
    });

    it('accepts a key until the instant it expires, then refuses it as expired', () => {
      expect(idOf(lookup(store, 'dated', NOW - 1))).to.equal('dated');
      expect(lookup(store, 'dated', NOW)).to.equal('expired');
    });

    it('refuses every secret of a revoked key as revoked, rotated-out ones included', () => {
      expect(lookup(store, 'gone', 0)).to.equal('revoked');
      expect(lookup(store, 'gone-old', 0)).to.equal('revoked');
    });

    it('accepts a rotated-out secret for the same key until its grace ends, never past the key expiry', () => {
      expect(lookup(store, 'old', NOW + 30 * 60_000 - 1)).to.equal(lookup(store, 'new', NOW));
      expect(lookup(store, 'old', NOW + 30 * 60_000)).to.equal('expired');
      expect(idOf(lookup(store, 'older', NOW + 60 * 60_000 - 1))).to.equal('rotated');
      expect(lookup(store, 'older', NOW + 60 * 60_000)).to.equal('expired');
      expect(lookup(store, 'new', NOW + 60 * 60_000)).to.equal('expired');
    });

    it('keeps the fields of each entry for `keys list`', () => {
      expect(store.records.map((record) => record.key.id)).to.deep.equal(['dated', 'gone', 'rotated']);
      expect(store.records[0]).to.include({ created: '2030-01-01T00:00:00Z', expires: '2030-06-01T12:00:00Z' });
      expect(store.records[2]!.previous[0]).to.deep.equal({ sha256: digest('old'), expires: '2030-06-01T12:30:00Z', last4: 'abcd' });
    });
  });

  describe('issued secrets (pk_…)', () => {
    const secret = generateSecret('live');
    const mistyped = secret.slice(0, 20) + (secret[20] === 'a' ? 'b' : 'a') + secret.slice(21);

    it('refuses a mistyped one for its checksum without looking it up, even were its digest in the file', () => {
      const store = ApiKeyStore.fromDocument({
        keys: [
          { id: 'real', sha256: digest(secret), plan: 'free' },
          { id: 'trap', sha256: digest(mistyped), plan: 'free' },
          { id: 'cut', sha256: digest(secret.slice(0, -1)), plan: 'free' },
        ],
      });
      expect(idOf(lookup(store, secret))).to.equal('real');
      expect(lookup(store, mistyped)).to.equal('checksum');
      expect(lookup(store, secret.slice(0, -1))).to.equal('checksum');
      expect(lookup(store, generateSecret('test'))).to.equal('unknown');
    });

    it('still looks legacy secrets (without the prefix) up by digest alone', () => {
      const store = ApiKeyStore.fromDocument({ keys: [{ id: 'old', sha256: digest('p_live_legacy'), plan: 'free' }] });
      expect(idOf(lookup(store, 'p_live_legacy'))).to.equal('old');
    });
  });
});
