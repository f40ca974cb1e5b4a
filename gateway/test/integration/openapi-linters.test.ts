import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { createApp } from '../../src/app';
import { listen } from '../../src/http/http-server';
import { ApiKeyStore } from '../../src/keys/api-keys';
import { createPetClient } from '../../src/pet-service-client/pet-client';
import type { ProxyRoute } from '../../src/upstream/routes-file';

const run = promisify(execFile);
const CONFIGS = join(__dirname, 'openapi-linters');

/** An installed package's command, run on this Node rather than through npx. */
function bin(name: string, command: string): string {
  const manifest = require.resolve(`${name}/package.json`);
  const bins = (JSON.parse(readFileSync(manifest, 'utf8')) as { bin: Record<string, string> }).bin;
  return join(dirname(manifest), bins[command]!);
}

/** Runs a linter that exits non-zero on errors; its JSON report on stdout is what is judged. */
async function lint(script: string, args: readonly string[], cwd: string): Promise<string> {
  const options = {
    cwd,
    maxBuffer: 16 * 1024 * 1024,
    // No telemetry, no update check: the lint needs no network.
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
  };
  try {
    return (await run(process.execPath, [script, ...args], options)).stdout;
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    if (stdout !== undefined && /^\s*[[{]/.test(stdout)) return stdout;
    throw new Error(`${script} failed: ${stderr ?? String(error)}`, { cause: error });
  }
}

/** The document as `GET /v1/openapi.json` serves it, from a gateway with `routes` on port 0. */
async function servedDocument(routes: readonly ProxyRoute[]): Promise<string> {
  const petClient = createPetClient({ target: '127.0.0.1:1', timeoutMs: 500 });
  const gateway = await listen(createApp({ petClient, apiKeys: ApiKeyStore.fromDocument({ keys: [] }), routes }), '127.0.0.1', 0);
  try {
    const response = await fetch(`http://127.0.0.1:${gateway.port}/v1/openapi.json`);
    expect(response.status).to.equal(200);
    return await response.text();
  } finally {
    gateway.server.closeAllConnections();
    await new Promise((resolve) => gateway.server.close(resolve));
    petClient.close();
  }
}

/** Spectral's severities by number. */
const SEVERITIES = ['error', 'warn', 'info', 'hint'];

const PROXIED: ProxyRoute = {
  prefix: '/v1/billing-reports',
  upstream: new URL('http://127.0.0.1:1/reports'),
  methods: ['GET', 'HEAD', 'POST', 'DELETE'],
  timeoutMs: 5000,
  bodyLimitBytes: 1024,
  plans: ['enterprise'],
};

/**
 * The served document as outside tools read it: Redocly CLI (recommended rules) and Spectral
 * (spectral:oas) find nothing in it, warnings included, with and without a proxied route.
 */
describe('the served OpenAPI document under Redocly CLI and Spectral (gateway on port 0)', function () {
  this.timeout(120_000);
  let directory: string;

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'openapi-lint-'));
  });
  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  for (const [what, routes] of [['without proxied routes', []], ['with a proxied route', [PROXIED]]] as const) {
    it(`passes both linters with no warning, ${what}`, async () => {
      const file = join(directory, 'openapi.json');
      writeFileSync(file, await servedDocument(routes));

      const redocly = JSON.parse(
        await lint(bin('@redocly/cli', 'redocly'), ['lint', file, '--format=json', `--config=${join(CONFIGS, 'redocly.yaml')}`, '--max-problems=1000'], directory),
      ) as { totals: { errors: number; warnings: number }; problems: Array<{ ruleId: string; severity: string; message: string }> };
      const spectral = JSON.parse(
        await lint(bin('@stoplight/spectral-cli', 'spectral'), ['lint', file, '--format=json', `--ruleset=${join(CONFIGS, 'spectral.yaml')}`, '--quiet'], directory),
      ) as Array<{ code: string; severity: number; message: string; path: string[] }>;

      expect({
        redocly: redocly.problems.map((problem) => `${problem.severity} ${problem.ruleId}: ${problem.message}`),
        spectral: spectral.map((result) => `${SEVERITIES[result.severity]} ${result.code} at ${result.path.join('.')}: ${result.message}`),
      }).to.deep.equal({ redocly: [], spectral: [] });
      expect(redocly.totals).to.include({ errors: 0, warnings: 0 });
    });
  }
});
