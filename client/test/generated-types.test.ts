import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const CLIENT = join(__dirname, '..');
const GENERATED = ['openapi.json', 'src/gen/openapi.ts'];

describe('generated client types', () => {
  let out: string;

  before(() => {
    out = mkdtempSync(join(tmpdir(), 'petstore-client-gen-'));
  });

  after(() => {
    rmSync(out, { recursive: true, force: true });
  });

  it('match what the gateway serves now (else: npm run generate:client, and commit)', () => {
    execFileSync(process.execPath, ['--import', 'tsx', join(CLIENT, 'scripts/generate.ts'), out], { cwd: CLIENT, stdio: 'pipe' });
    for (const file of GENERATED) {
      expect(readFileSync(join(out, file), 'utf8'), `${file} is stale`).to.equal(readFileSync(join(CLIENT, file), 'utf8'));
    }
  });
});
