import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import type { Context } from 'mocha';
import { findExecutable, pendingOrRequired } from '../../../system-test/support/executables';

const ROOT = join(__dirname, '..', '..', '..');
/** podman with runc and explicit rlimits (deploy/images/podman.sh): what stands for `docker` here. */
export const PODMAN_SH = join(ROOT, 'deploy', 'images', 'podman.sh');
const RUNC = '/usr/sbin/runc';

export type Service = 'gateway' | 'pet-service';
export const SERVICES: readonly Service[] = ['gateway', 'pet-service'];

/** The images deploy/images/build.sh tags: `localhost/petstore/<service>:<PETSTORE_IMAGE_TAG or e2e>`. */
export function imageName(service: Service): string {
  return `localhost/petstore/${service}:${process.env.PETSTORE_IMAGE_TAG || 'e2e'}`;
}

/**
 * Marks the suite pending (or, with REQUIRE_PODMAN=1, failed) unless podman, runc and root are
 * there: the images are built rootful (debootstrap) and run with runc, as in CI.
 */
export function podmanOrSkip(context: Context): void {
  const install = 'apt-get install podman buildah runc debootstrap';
  if (findExecutable('PODMAN_BIN', 'podman', '/usr/bin/podman') === undefined) {
    pendingOrRequired(context, 'REQUIRE_PODMAN', `podman is not installed (${install})`);
  }
  try {
    accessSync(RUNC, constants.X_OK);
  } catch {
    pendingOrRequired(context, 'REQUIRE_PODMAN', `runc is not at ${RUNC} (${install})`);
  }
  if (process.getuid?.() !== 0) {
    pendingOrRequired(context, 'REQUIRE_PODMAN', 'the image suites run as root (debootstrap builds the base, rootful podman runs it)');
  }
}

/** Runs deploy/images/podman.sh with `args`; resolves to its stdout, rejects with its stderr. */
export function podman(args: readonly string[], { cwd = ROOT } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(PODMAN_SH, args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`podman ${args.join(' ')}: ${stderr || error.message}`));
      else resolve(stdout);
    });
  });
}

/** Both streams a container wrote, its stdout's lines then its stderr's. */
export async function containerLogs(name: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    execFile(PODMAN_SH, ['logs', name], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`podman logs ${name}: ${stderr || error.message}`));
      else resolve(`${stdout}\n${stderr}`.split('\n').filter((line) => line !== ''));
    });
  });
}

/** What deploy/images/build.sh printed for an image: its size in MB and how much the Dockerfile adds to the base. */
export interface BuiltImage {
  readonly megabytes: number;
  readonly aboveBaseMegabytes: number;
}

let build: Promise<Record<Service, BuiltImage>> | undefined;

/**
 * Builds both images with deploy/images/build.sh, once per test process: the suites test the
 * current sources, and a second build with nothing changed takes seconds (podman's layer cache).
 */
export function buildImages(): Promise<Record<Service, BuiltImage>> {
  build ??= new Promise((resolve, reject) => {
    console.log('      building the images (deploy/images/build.sh; minutes on a cold cache)');
    const child = spawn('bash', [join(ROOT, 'deploy', 'images', 'build.sh')], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`deploy/images/build.sh exited ${code}:\n${stderr}`));
      const images = {} as Record<Service, BuiltImage>;
      for (const service of SERVICES) {
        const line = new RegExp(`^${imageName(service).replace(/[.]/g, '\\.')} (\\d+) MB \\((\\d+) MB above `, 'm').exec(stdout);
        if (line === null) return reject(new Error(`deploy/images/build.sh printed no size for ${imageName(service)}:\n${stdout}`));
        images[service] = { megabytes: Number(line[1]), aboveBaseMegabytes: Number(line[2]) };
      }
      console.log(stdout.replace(/^/gm, '      ').trimEnd());
      resolve(images);
    });
  });
  return build;
}

/**
 * Builds the stand-ins for Redis's and MongoDB's images (deploy/e2e/stand-ins/build.sh, after
 * buildImages, which makes their Debian base) and resolves to their names, e.g.
 * `docker.io/library/redis:7.4.5-bookworm`. Cached by podman as the images are.
 */
export async function buildStandIns(): Promise<string[]> {
  await buildImages();
  const { stdout } = await promisify(execFile)('bash', [join(ROOT, 'deploy', 'e2e', 'stand-ins', 'build.sh')], { cwd: ROOT, encoding: 'utf8' });
  return stdout.split('\n').filter((line) => line !== '');
}
