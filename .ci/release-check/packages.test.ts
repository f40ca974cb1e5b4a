/**
 * Release checks of the two published packages, as a customer meets them: each is packed, and
 * the tarballs are installed into a project outside the workspace (no workspace link, no tsx,
 * no `paths`), where plain Node runs an ES module and a CommonJS program against a gateway and a
 * pet service started here, and tsc type-checks a strict consumer. publint and
 * @arethetypeswrong/cli check the very tarballs installed. Needs the npm registry for the
 * packages' own dependencies, so CI runs it as a step of its own rather than in `npm test`.
 */
import { expect } from 'chai';
import { execFile, execFileSync, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { cpSync, lstatSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, sep } from 'node:path';
import { secretOf, startRateLimitStack, type RateLimitStack } from '../../system-test/support/rate-limit-stack';

const ROOT = join(__dirname, '..', '..');
const CONSUMER = join(__dirname, 'consumer');

interface Packed {
  readonly tarball: string;
  readonly files: readonly string[];
}

/** Files both packages must ship: the manifest, the README, both entries and their types. */
const ENTRY_FILES = ['package.json', 'README.md', 'dist/index.js', 'dist/index.mjs', 'dist/index.d.ts', 'dist/index.d.mts', 'dist/index.d.ts.map'];

/** What each package may ship (every file must match one) and must ship (each must be there). */
const CONTENTS: Record<'proto' | 'client', { readonly allowed: readonly RegExp[]; readonly required: readonly string[] }> = {
  proto: {
    allowed: [
      /^package\.json$/,
      /^README\.md$/,
      /^[a-z0-9-]+\.m?ts$/,
      /^transport\/[a-z0-9-]+\.ts$/,
      /^gen\/[a-z0-9/_]+\.ts$/,
      /^dist\/(gen\/[a-z0-9/_]+\/|transport\/)?[a-z0-9_-]+\.(js|mjs|d\.ts|d\.mts)(\.map)?$/,
      /^(petstore|google)\/[a-z0-9/_]+\.proto$/,
    ],
    required: [
      ...ENTRY_FILES,
      'petstore/v1/pet_service.proto',
      'google/rpc/status.proto',
      'google/rpc/error_details.proto',
      'transport/unary-transport.ts',
      'dist/transport/unary-transport.js',
      'dist/transport/unary-transport.d.ts',
    ],
  },
  client: {
    allowed: [
      /^package\.json$/,
      /^README\.md$/,
      /^src\/(gen\/)?[a-z-]+\.m?ts$/,
      /^dist\/(gen\/)?[a-z-]+\.(js|mjs|d\.ts|d\.mts)(\.map)?$/,
      /^dist\/browser\/petstore-client\.mjs$/,
    ],
    required: [
      ...ENTRY_FILES,
      'dist/browser/petstore-client.mjs',
    ],
  },
};

/**
 * The environment of a customer's shell: none of npm's script settings (npm_config_*, which
 * would point npm back at the workspace), no NODE_OPTIONS, and no workspace bin folder on PATH.
 */
function customerEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!/^npm_/i.test(name) && name !== 'NODE_OPTIONS' && name !== 'INIT_CWD') env[name] = value;
  }
  env.PATH = (process.env.PATH ?? '')
    .split(delimiter)
    .filter((dir) => dir !== '' && !`${dir}${sep}`.startsWith(`${ROOT}${sep}`))
    .join(delimiter);
  return { ...env, ...extra };
}

function run(command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): SpawnSyncReturns<string> {
  return spawnSync(command, args, { cwd, env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}

/** Fails with the command's output when it did not exit 0. */
function expectSuccess(result: SpawnSyncReturns<string>, what: string): string {
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}${result.error?.message ?? ''}`;
  expect(result.status, `${what} failed:\n${output}`).to.equal(0);
  return output;
}

/** Resolves with the output of a command that exited 0; else rejects with all it printed. */
function runAsync(command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<{ stdout: string }> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd, env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(' ')} failed (${error.message}):\n${stdout}${stderr}`));
      else resolve({ stdout });
    });
  });
}

function versionOf(name: string): string {
  return (JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
}

describe('release checks: the packed packages in a project outside the workspace', function () {
  let scratch: string;
  const packed = new Map<'proto' | 'client', Packed>();

  before(function () {
    scratch = mkdtempSync(join(tmpdir(), 'petstore-consumer-'));
    cpSync(CONSUMER, scratch, { recursive: true });
    for (const name of ['proto', 'client'] as const) {
      // prepack builds the package first, as it does before `npm publish`.
      const json = execFileSync('npm', ['pack', '--json', '--pack-destination', scratch], { cwd: join(ROOT, name), encoding: 'utf8' });
      const [report] = JSON.parse(json.slice(json.indexOf('['))) as [{ filename: string; files: { path: string }[] }];
      packed.set(name, { tarball: join(scratch, report.filename), files: report.files.map((file) => file.path) });
    }
    const install = run(
      'npm',
      [
        'install',
        '--no-audit',
        '--no-fund',
        '--prefer-offline',
        ...[...packed.values()].map((pack) => pack.tarball),
        // No @types/node of its own: the type check sees only what the packages' dependencies
        // bring, as for a customer who installed nothing else.
        `typescript@${versionOf('typescript')}`,
      ],
      scratch,
      customerEnv(),
    );
    expectSuccess(install, 'npm install of the tarballs');
  });

  after(() => {
    if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
  });

  for (const name of ['proto', 'client'] as const) {
    describe(`@petstore/${name}`, () => {
      it('ships exactly what a consumer needs (npm publish lists these files)', () => {
        const { files } = packed.get(name)!;
        const { allowed, required } = CONTENTS[name];
        expect(files.filter((file) => !allowed.some((pattern) => pattern.test(file))), 'unexpected files').to.deep.equal([]);
        expect(required.filter((file) => !files.includes(file)), 'missing files').to.deep.equal([]);
      });

      it('is installed from its tarball, not linked to the workspace', () => {
        const installed = join(scratch, 'node_modules', '@petstore', name);
        expect(lstatSync(installed).isSymbolicLink()).to.equal(false);
        expect(realpathSync(installed).startsWith(realpathSync(scratch))).to.equal(true);
      });

      it('passes publint (warnings are errors)', () => {
        expectSuccess(run(join(ROOT, 'node_modules/.bin/publint'), ['run', '--strict', packed.get(name)!.tarball], ROOT, process.env), 'publint');
      });

      it('passes @arethetypeswrong/cli: types resolve for node10, node16 (CJS and ESM) and bundlers', () => {
        expectSuccess(run(join(ROOT, 'node_modules/.bin/attw'), ['--no-color', packed.get(name)!.tarball], ROOT, process.env), 'attw');
      });
    });
  }

  for (const config of ['tsconfig.nodenext.json', 'tsconfig.bundler.json']) {
    it(`type-checks a strict consumer with skipLibCheck off (${config})`, () => {
      const tsc = join(scratch, 'node_modules/typescript/bin/tsc');
      expectSuccess(run(process.execPath, [tsc, '-p', config], scratch, customerEnv()), `tsc -p ${config}`);
    });
  }

  describe('run with plain node against a gateway and a pet service', () => {
    let stack: RateLimitStack;

    beforeEach(async () => {
      stack = await startRateLimitStack({
        keys: [
          { id: 'bulk', plan: 'enterprise', limits: { perMinute: 1e9, perDay: 1e9 } },
          { id: 'one-a-minute', plan: 'enterprise', limits: { perMinute: 1, perDay: 1000 } },
        ],
      });
    });

    afterEach(async () => {
      await stack.close();
    });

    for (const [program, done] of [
      ['consumer.mjs', 'ESM consumer: ok'],
      ['consumer.cjs', 'CommonJS consumer: ok'],
    ] as const) {
      it(`${program}: lists, creates categoryId 2^63-1 exactly, pages 250 pets, meets a 429, calls the pet service`, async () => {
        const env = customerEnv({
          PETSTORE_URL: stack.baseUrl,
          PETSTORE_KEY: secretOf('bulk'),
          PETSTORE_LIMITED_KEY: secretOf('one-a-minute'),
          PET_SERVICE_TARGET: `127.0.0.1:${stack.petService.port}`,
        });
        // Not spawnSync: the gateway answering it runs on this process's event loop.
        const { stdout } = await runAsync(process.execPath, [program], scratch, env);
        expect(stdout).to.include(done);
      });
    }
  });
});
