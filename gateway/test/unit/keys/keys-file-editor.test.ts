import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { YAMLSeq } from 'yaml';
import { sha256Hex } from '../../../src/keys/api-keys';
import { editKeysFile, RejectedEditError } from '../../../src/keys/keys-file-editor';

describe('editKeysFile', () => {
  let dir: string;
  let file: string;
  const original = `keys:\n  - id: a\n    sha256: ${sha256Hex('a')}\n    plan: free\n`;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'keys-edit-'));
    file = join(dir, 'keys.yaml');
    writeFileSync(file, original);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writes nothing that the gateway would reject, and releases the lock', async () => {
    const edit = editKeysFile(file, (document) => (document.get('keys') as YAMLSeq).add(document.createNode({ id: 'b', plan: 'free' })));
    const error = await edit.then(() => undefined, (reason: unknown) => reason);
    expect(error).to.be.instanceOf(RejectedEditError);
    expect((error as Error).message).to.match(/^not written, the gateway would reject it: API_KEYS_FILE \S+: key "b": sha256/);
    expect(readFileSync(file, 'utf8')).to.equal(original);
    expect(readdirSync(dir)).to.deep.equal(['keys.yaml']);
  });

  it('writes nothing when the edit throws, and releases the lock', async () => {
    const edit = editKeysFile(file, () => {
      throw new Error('changed my mind');
    });
    expect(await edit.then(() => undefined, (reason: unknown) => (reason as Error).message)).to.equal('changed my mind');
    expect(readFileSync(file, 'utf8')).to.equal(original);
    expect(readdirSync(dir)).to.deep.equal(['keys.yaml']);
  });
});
