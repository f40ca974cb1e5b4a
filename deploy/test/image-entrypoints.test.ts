import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { expectClosed, holdHttpRequest, run, signalWithCallInFlight, type Started } from '../../system-test/support/commands';
import { freePort } from '../../system-test/support/redis-server';
import { BUILD_ENTRIES } from '../../scripts/build-entries';
import { entrypoint, parseDockerfile } from './support/dockerfile';

const ROOT = join(__dirname, '..', '..');

/** The final stage's ENTRYPOINT, as the image runs it from its WORKDIR (/app, laid out as the repo). */
function imageCommand(service: 'gateway' | 'pet-service'): string[] {
  const dockerfile = parseDockerfile(readFileSync(join(ROOT, service, 'Dockerfile'), 'utf8'));
  return entrypoint(dockerfile.stages.at(-1)!)!;
}

/**
 * Each image's entrypoint is `node` itself (PID 1 in the container), so a SIGTERM from the
 * container runtime reaches the server. Run here from the repository's own build, the layout the
 * image copies: in-flight work finishes, the ports close, and the process exits 0.
 */
describe("SIGTERM to each image's entrypoint", function () {
  this.timeout(120_000);
  let started: Started | undefined;

  before(function () {
    const build = spawnSync('npm', ['run', 'build'], { cwd: ROOT, encoding: 'utf8' });
    if (build.status !== 0) throw new Error(`npm run build failed: ${build.stderr}`);
  });
  afterEach(() => {
    if (started?.child.exitCode === null) started.child.kill('SIGKILL');
  });

  /** The gateway image's entrypoint, run from the repository's build, with no pet service behind it. */
  async function startGateway(): Promise<{ gateway: Started; port: number; adminPort: number }> {
    const [, ...args] = imageCommand('gateway');
    const [port, adminPort, nobody] = [await freePort(), await freePort(), await freePort()];
    const gateway = run(process.execPath, args, {
      NODE_ENV: 'production',
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      PET_SERVICE_ADDR: `127.0.0.1:${nobody}`,
      API_KEYS_FILE: join(ROOT, 'gateway', 'config', 'demo-keys.yaml'),
    });
    started = gateway;
    await gateway.waitForLine('gateway listening');
    return { gateway, port, adminPort };
  }

  it('gateway: answers the in-flight request, closes its ports and exits 0', async () => {
    const [command] = imageCommand('gateway');
    expect(command).to.equal('node');
    const { gateway, port, adminPort } = await startGateway();
    const request = await holdHttpRequest(port);
    const exited = once(gateway.child, 'exit');
    gateway.child.kill('SIGTERM');
    await gateway.waitForLine('"signal":"SIGTERM"');
    expect(await request.finish()).to.match(/^HTTP\/1\.1 503 Service Unavailable\r\n/);
    expect(await exited).to.deep.equal([0, null]);
    await expectClosed(port, adminPort);
  });

  it('gateway: serves the API reference at /docs with every asset it links to (resolved from node_modules, as in the image)', async () => {
    const { gateway, port } = await startGateway();
    const page = await fetch(`http://127.0.0.1:${port}/docs`);
    expect(page.status).to.equal(200);
    const files = [...(await page.text()).matchAll(/(?:src|href)="(\/[^"]+)"/g)].map((match) => match[1]!);
    expect(files).to.have.length(4);
    for (const file of files) expect((await fetch(`http://127.0.0.1:${port}${file}`)).status, file).to.equal(200);
    const exited = once(gateway.child, 'exit');
    gateway.child.kill('SIGTERM');
    expect(await exited).to.deep.equal([0, null]);
  });

  it("bundles' source maps name the TypeScript files and lines but carry no source text (the images ship none)", () => {
    for (const output of Object.keys(BUILD_ENTRIES)) {
      const map = JSON.parse(readFileSync(join(ROOT, `${output}.js.map`), 'utf8')) as { sources: string[]; mappings: string };
      expect(map.sources.filter((source) => source.endsWith('.ts')), output).to.not.deep.equal([]);
      expect(map.mappings, output).to.not.equal('');
      expect(map, output).to.not.have.property('sourcesContent');
    }
  });

  it('pet service: finishes the in-flight call OK, closes its ports and exits 0', async () => {
    const [command, ...args] = imageCommand('pet-service');
    expect(command).to.equal('node');
    const [port, adminPort] = [await freePort(), await freePort()];
    started = run(process.execPath, args, { NODE_ENV: 'production', PET_SERVICE_PORT: String(port), ADMIN_PORT: String(adminPort) });
    await started.waitForLine('pet service listening');
    expect(await signalWithCallInFlight(started, port)).to.deep.equal({ call: 'OK', exit: [0, null] });
    await expectClosed(port, adminPort);
  });
});
