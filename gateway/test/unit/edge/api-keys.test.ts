import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { ApiKeyStore, sha256Hex } from '../../../src/edge/api-keys';

const digest = (secret: string) => sha256Hex(secret);

describe('ApiKeyStore', () => {
  it('finds a key by its secret and applies plan limits and overrides', () => {
    const store = ApiKeyStore.fromDocument({
      keys: [
        { id: 'a', sha256: digest('sa'), plan: 'free' },
        { id: 'b', sha256: digest('sb'), plan: 'pro', limits: { perMinute: 5 } },
        { id: 'c', sha256: digest('sc'), plan: 'enterprise', limits: { perMinute: 5000, perDay: 2000000 } },
      ],
    });
    expect(store.find('sa')).to.deep.equal({ id: 'a', plan: 'free', limits: { perMinute: 60, perDay: 1000 } });
    expect(store.find('sb')).to.deep.equal({ id: 'b', plan: 'pro', limits: { perMinute: 5, perDay: 10000 } });
    expect(store.find('sc')!.limits).to.deep.equal({ perMinute: 5000, perDay: 2000000 });
    expect(store.find('nope')).to.equal(undefined);
    expect(store.find(digest('sa'))).to.equal(undefined);
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
    expect(ApiKeyStore.load(join(dir, 'k.yaml')).find('s')!.id).to.equal('y');
    expect(ApiKeyStore.load(join(dir, 'k.json')).find('s')!.id).to.equal('j');
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
    expect(store.find('demo-free-key-0000')!.plan).to.equal('free');
    expect(store.find('demo-enterprise-key-0000')!.plan).to.equal('enterprise');
  });
});
