import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import pino from 'pino';
import { type ApiKey, ApiKeyStore, sha256Hex } from '../../src/keys/api-keys';
import { createKeysFileReloader, type KeysFileReloader } from '../../src/keys/keys-file-reloader';
import { createMetrics, type GatewayMetrics } from '../../src/observability/metrics';
import { waitFor } from '../../../system-test/support/wait-for';

/** Long enough that a test given it sees only what the directory watch does. */
const NO_POLL_MS = 3_600_000;
const NOW = Date.parse('2030-01-01T00:00:00Z');

const keysYaml = (...ids: string[]): string =>
  `# kept by hand\nkeys:\n${ids.map((id) => `  - id: ${id}\n    sha256: ${sha256Hex(`secret-${id}`)}\n    plan: free\n`).join('')}`;

describe('keys file reloader', function () {
  this.timeout(20_000);
  let dir: string;
  let reloader: KeysFileReloader | undefined;
  let metrics: GatewayMetrics;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'keys-reload-'));
    metrics = createMetrics();
  });
  afterEach(() => {
    reloader?.close();
    reloader = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  const start = (path: string, pollIntervalMs: number): KeysFileReloader => {
    reloader = createKeysFileReloader({ path, initial: ApiKeyStore.load(path), logger: pino({ level: 'silent' }), metrics, pollIntervalMs, now: () => NOW });
    return reloader;
  };
  /** Starts on a new `keys.yaml` holding `ids`. */
  const startOn = (ids: string[], pollIntervalMs: number): { path: string; keys: KeysFileReloader } => {
    const path = join(dir, 'keys.yaml');
    writeFileSync(path, keysYaml(...ids));
    return { path, keys: start(path, pollIntervalMs) };
  };
  const accepts = (keys: KeysFileReloader, id: string): boolean => (keys.identify(`secret-${id}`, NOW) as ApiKey).id === id;
  const reloads = async (outcome: string): Promise<number> =>
    (await metrics.apiKeysReloads.get()).values.find((value) => value.labels.outcome === outcome)?.value ?? -1;
  const lastReloadSuccessful = async (): Promise<number | undefined> => (await metrics.apiKeysLastReloadSuccessful.get()).values[0]?.value;
  /** Replaces `path` as the keys CLI does: a new file renamed over it. */
  const replace = (path: string, text: string): void => {
    writeFileSync(`${path}.tmp`, text);
    renameSync(`${path}.tmp`, path);
  };

  it('reports the keys loaded at start, and no reload yet', async () => {
    startOn(['a', 'b'], NO_POLL_MS);
    expect((await metrics.apiKeysLoaded.get()).values[0]!.value).to.equal(2);
    expect((await metrics.apiKeysLastReloadSuccess.get()).values[0]!.value).to.equal(NOW / 1000);
    expect(await reloads('success')).to.equal(0);
    expect(await reloads('failure')).to.equal(0);
    expect(await lastReloadSuccessful()).to.equal(1);
  });

  // Each change is made twice: a watch on the file itself would see the first, then never fire again.
  it('follows a file renamed over the old one, time after time, by the directory watch alone', async () => {
    const { path, keys } = startOn(['a'], NO_POLL_MS);
    replace(path, keysYaml('a', 'b'));
    await waitFor(async () => accepts(keys, 'b'), 5000);
    expect(await reloads('success')).to.equal(1);
    expect((await metrics.apiKeysLoaded.get()).values[0]!.value).to.equal(2);
    replace(path, keysYaml('a', 'b', 'c'));
    await waitFor(async () => accepts(keys, 'c'), 5000);
    expect((await metrics.apiKeysLoaded.get()).values[0]!.value).to.equal(3);
  });

  it('follows a file edited in place, by the directory watch alone', async () => {
    const { path, keys } = startOn(['a'], NO_POLL_MS);
    writeFileSync(path, keysYaml('b'));
    await waitFor(async () => accepts(keys, 'b'), 5000);
    writeFileSync(path, keysYaml('c'));
    await waitFor(async () => accepts(keys, 'c'), 5000);
  });

  it('follows the symlink swap of a Kubernetes Secret volume, by the directory watch alone', async () => {
    // What the kubelet does: files in a timestamped directory, `..data` a symlink to it, and the
    // mounted name a symlink through `..data`; an update swaps `..data` by a rename, then deletes the old directory.
    mkdirSync(join(dir, '..2030_01_01_00_00_00.1'));
    writeFileSync(join(dir, '..2030_01_01_00_00_00.1', 'keys.yaml'), keysYaml('a'));
    symlinkSync('..2030_01_01_00_00_00.1', join(dir, '..data'));
    symlinkSync(join('..data', 'keys.yaml'), join(dir, 'keys.yaml'));
    const keys = start(join(dir, 'keys.yaml'), NO_POLL_MS);
    expect(accepts(keys, 'a')).to.equal(true);

    const swap = (from: string, to: string, ids: string[]): void => {
      mkdirSync(join(dir, to));
      writeFileSync(join(dir, to, 'keys.yaml'), keysYaml(...ids));
      symlinkSync(to, join(dir, '..data_tmp'));
      renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
      rmSync(join(dir, from), { recursive: true });
    };
    swap('..2030_01_01_00_00_00.1', '..2030_01_01_00_01_00.2', ['b']);
    await waitFor(async () => accepts(keys, 'b'), 5000);
    expect(keys.identify('secret-a', NOW)).to.equal('unknown');
    swap('..2030_01_01_00_01_00.2', '..2030_01_01_00_02_00.3', ['c']);
    await waitFor(async () => accepts(keys, 'c'), 5000);
  });

  it('follows a path that is a symlink into another directory by polling, which the directory watch cannot see', async () => {
    mkdirSync(join(dir, 'elsewhere'));
    const target = join(dir, 'elsewhere', 'keys.yaml');
    writeFileSync(target, keysYaml('a'));
    mkdirSync(join(dir, 'mounted'));
    symlinkSync(target, join(dir, 'mounted', 'keys.yaml'));
    const keys = start(join(dir, 'mounted', 'keys.yaml'), 100);
    replace(target, keysYaml('a', 'c'));
    await waitFor(async () => accepts(keys, 'c'), 5000);
  });

  it('keeps the last good keys when the file turns bad, counts that once, and takes the next good file', async () => {
    const { path, keys } = startOn(['a'], 100);
    replace(path, 'keys:\n  - id: a\n    plan: [free\n');
    await waitFor(async () => (await reloads('failure')) === 1, 5000);
    expect(accepts(keys, 'a')).to.equal(true);
    // Unchanged bad content is not reported again, whatever prompts the read.
    expect(keys.reload('test')).to.equal(false);
    expect(await reloads('failure')).to.equal(1);
    expect(await lastReloadSuccessful(), 'the file on disk is not in force').to.equal(0);

    replace(path, keysYaml('a', 'b'));
    await waitFor(async () => accepts(keys, 'b'), 5000);
    expect(await reloads('success')).to.equal(1);
    expect(await reloads('failure')).to.equal(1);
    expect(await lastReloadSuccessful()).to.equal(1);
  });

  it('keeps the last good keys when the file disappears', async () => {
    const { path, keys } = startOn(['a'], NO_POLL_MS);
    rmSync(path);
    await waitFor(async () => (await reloads('failure')) === 1, 5000);
    expect(await lastReloadSuccessful()).to.equal(0);
    expect(accepts(keys, 'a')).to.equal(true);
    expect(keys.reload('test')).to.equal(false);
    expect(await reloads('failure')).to.equal(1);
  });

  it('rereads unchanged content only when forced, as on SIGHUP', async () => {
    const { keys } = startOn(['a'], NO_POLL_MS);
    const before = keys.current();
    expect(keys.reload('test')).to.equal(false);
    expect(keys.current()).to.equal(before);
    expect(keys.reload('SIGHUP', true)).to.equal(true);
    expect(keys.current()).to.not.equal(before);
    expect(await reloads('success')).to.equal(1);
  });
});
