import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { freePort } from '../../system-test/support/redis-server';
import { buildImages, imageName, PODMAN_SH, podmanOrSkip } from './support/podman';

const ROOT = join(__dirname, '..', '..');
const SECTION = '## Running the images without Kubernetes';

/** One command of a shell block (continuation lines joined), and the output lines the doc shows under it. */
interface DocumentedCommand {
  readonly text: string;
  readonly output: readonly string[];
}

/**
 * The first `sh` block of the section: its commands, and for each the `# ...` lines right under it,
 * which are what it prints (comments that explain sit at the end of a command's line).
 */
function documentedCommands(markdown: string): DocumentedCommand[] {
  const section = markdown.slice(markdown.indexOf(SECTION));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  if (!markdown.includes(SECTION) || block === undefined) throw new Error(`docs/deploy.md: no sh block under "${SECTION}"`);
  const commands: { text: string; output: string[] }[] = [];
  let continued = false;
  for (const line of block.split('\n')) {
    if (line.trim() === '') continue;
    if (continued) commands.at(-1)!.text += `\n${line}`;
    else if (line.startsWith('# ')) {
      if (commands.length === 0) throw new Error(`output before any command: ${line}`);
      commands.at(-1)!.output.push(line.slice(2));
    } else commands.push({ text: line, output: [] });
    continued = line.endsWith('\\');
  }
  return commands;
}

/** Runs a bash script; resolves to its exit code and output, whatever the code. */
function bash(script: string, cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('bash', ['-c', script], { cwd, env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr }),
    );
  });
}

/**
 * docs/deploy.md's `docker run` example, run as written: `docker` is deploy/images/podman.sh (podman
 * with runc and explicit rlimits), IMAGES and TAG name the images built here, and the published
 * port 8080 is a free one (`-p 8080:` and `localhost:8080`), as the machine may serve 8080 already.
 * The names the example gives (containers, network) must not exist: the run holds a lock so that
 * two checkouts on one machine take turns, and removes whatever the example left behind.
 */
describe("docs/deploy.md: the docker run example works as written (podman standing in for docker)", function () {
  this.timeout(180_000);
  const commands = documentedCommands(readFileSync(join(ROOT, 'docs', 'deploy.md'), 'utf8'));

  it('parses: commands, and what each prints', () => {
    expect(commands.some((command) => /^docker run .*--name gateway/s.test(command.text))).to.equal(true);
    expect(commands.filter((command) => command.output.length > 0).length).to.be.at.least(3);
  });

  describe('run with podman', () => {
    let cwd: string | undefined;

    before(async function () {
      this.timeout(30 * 60_000);
      podmanOrSkip(this);
      await buildImages();
      cwd = mkdtempSync(join(tmpdir(), 'petstore-docker-run-'));
    });
    after(() => {
      if (cwd !== undefined) rmSync(cwd, { recursive: true, force: true });
    });

    it('runs: the gateway answers with a key made by its own image, both containers stop with exit 0, nothing is left behind', async () => {
      const port = await freePort();
      const names = commands.flatMap((command) => [...command.text.matchAll(/--name (\S+)/g)].map((match) => match[1]!));
      const networks = commands.flatMap((command) => [...command.text.matchAll(/docker network create (\S+)/g)].map((match) => match[1]!));
      expect(names).to.have.members(['gateway', 'pet-service']);
      const steps = commands.map((command, index) => `printf '\\n@@%d\\n' ${index}\n${command.text.replaceAll('-p 8080:', `-p ${port}:`).replaceAll('localhost:8080', `localhost:${port}`)}`);
      const script = `
        exec 9>"\${PETSTORE_IMAGES_CACHE:-/var/cache/petstore-images}/docker-run-example.lock"
        flock 9
        docker() { "$PODMAN_SH" "$@"; }
        for name in ${names.join(' ')}; do
          if docker container exists "$name"; then echo "a container named $name exists; the example needs the name" >&2; exit 3; fi
        done
        for network in ${networks.join(' ')}; do
          if docker network exists "$network"; then echo "a network named $network exists; the example needs the name" >&2; exit 3; fi
        done
        trap 'code=$?; docker rm --force --time 0 ${names.join(' ')} >/dev/null 2>&1 || true; docker network rm ${networks.join(' ')} >/dev/null 2>&1 || true; exit $code' EXIT
        set -euo pipefail
        ${steps.join('\n')}
        printf '\\n@@end\\n'
        for name in ${names.join(' ')}; do if docker container exists "$name"; then echo "left behind: container $name"; fi; done
        for network in ${networks.join(' ')}; do if docker network exists "$network"; then echo "left behind: network $network"; fi; done
      `;
      const [images, tag] = imageName('gateway').split(/\/gateway:/);
      const { code, stdout, stderr } = await bash(script, cwd!, { PODMAN_SH, IMAGES: images, TAG: tag });
      expect(code, `exit ${code}\n${stdout}\n${stderr}`).to.equal(0);
      // What each step printed, by its marker.
      const parts = stdout.split(/\n@@(\d+|end)\n/);
      const printed = new Map<string, string[]>();
      for (let i = 1; i < parts.length; i += 2) printed.set(parts[i]!, parts[i + 1]!.split('\n').filter((line) => line !== ''));
      commands.forEach((command, index) => {
        if (command.output.length > 0) expect(printed.get(String(index)), command.text).to.deep.equal(command.output);
      });
      expect(printed.get('end'), 'left behind').to.deep.equal([]);
    });
  });
});
