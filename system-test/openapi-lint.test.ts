import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { startTestStack, type TestStack } from './support/test-stack';

const ROOT = join(__dirname, '..');
const BIN = join(ROOT, 'node_modules', '.bin');

/** Runs a linter from node_modules on the project's Node; resolves with its stdout, whatever its exit code. */
function lint(command: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [join(BIN, command), ...args],
      // No network: Redocly's telemetry and update check off; Spectral reads only the local ruleset.
      { cwd: ROOT, env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => (stdout === '' && error !== null ? reject(new Error(`${command}: ${stderr}`)) : resolve(stdout)),
    );
  });
}

/**
 * Issue 40: the served document as outside tools read it. Redocly CLI (its recommended rules) and
 * Spectral (spectral:oas) lint `GET /v1/openapi.json` as a gateway serves it; a warning fails the
 * test as an error does, since each is something a client's tooling would show its users.
 */
describe('GET /v1/openapi.json, linted by Redocly CLI and Spectral', function () {
  this.timeout(120_000);
  let stack: TestStack;
  let dir: string;
  let document: string;

  before(async () => {
    stack = await startTestStack();
    dir = mkdtempSync(join(tmpdir(), 'openapi-lint-'));
    document = join(dir, 'openapi.json');
    const response = await fetch(`${stack.baseUrl}/v1/openapi.json`);
    expect(response.status).to.equal(200);
    writeFileSync(document, await response.text());
    writeFileSync(join(dir, '.spectral.yaml'), 'extends: ["spectral:oas"]\n');
  });

  after(async () => {
    await stack.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('Redocly CLI, recommended rules: no error, no warning', async () => {
    const report = JSON.parse(await lint('redocly', ['lint', document, '--extends', 'recommended', '--format', 'json'])) as {
      totals: { errors: number; warnings: number };
      problems: Array<{ ruleId: string; message: string; location?: Array<{ pointer?: string }> }>;
    };
    const problems = report.problems.map((problem) => `${problem.ruleId} at ${problem.location?.[0]?.pointer ?? '?'}: ${problem.message}`);
    expect(problems).to.deep.equal([]);
    expect(report.totals).to.include({ errors: 0, warnings: 0 });
  });

  it('Spectral, spectral:oas: no error, no warning', async () => {
    const report = JSON.parse(await lint('spectral', ['lint', document, '--ruleset', join(dir, '.spectral.yaml'), '--format', 'json', '--quiet'])) as Array<{
      code: string;
      message: string;
      path: string[];
    }>;
    expect(report.map((problem) => `${problem.code} at ${problem.path.join('.')}: ${problem.message}`)).to.deep.equal([]);
  });
});
