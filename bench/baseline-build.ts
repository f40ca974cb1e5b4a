import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readlinkSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..');

/**
 * Extracts `commit`'s tree under `.bench/` and builds it there (`npm run build`'s script); returns
 * that directory, relative to the repository, whose `gateway/dist/main.js` and
 * `pet-service/dist/main.js` a benchmark loads beside this checkout's (`BENCH_BASELINE`).
 */
export function buildBaseline(commit: string): string {
  const sha = execFileSync('git', ['rev-parse', '--short', commit], { cwd: ROOT, encoding: 'utf8' }).trim();
  const dir = join('.bench', `baseline-${sha}`);
  execFileSync('sh', ['-c', `rm -rf "${dir}" && mkdir -p "${dir}" && git archive ${sha} | tar -x -C "${dir}"`], { cwd: ROOT });
  // Its own workspace packages (@petstore/*), linked as npm links this checkout's; its npm
  // packages resolve to this checkout's node_modules, including a workspace's own folder where npm
  // put a version apart from the hoisted one (the gateway's ajv 8 beside a hoisted ajv 6).
  mkdirSync(join(ROOT, dir, 'node_modules', '@petstore'), { recursive: true });
  for (const name of readdirSync(join(ROOT, 'node_modules', '@petstore'))) {
    const workspace = readlinkSync(join(ROOT, 'node_modules', '@petstore', name));
    symlinkSync(workspace, join(ROOT, dir, 'node_modules', '@petstore', name));
    const own = join(ROOT, 'node_modules', '@petstore', workspace, 'node_modules');
    const theirs = join(ROOT, dir, 'node_modules', '@petstore', workspace);
    if (existsSync(own) && existsSync(theirs)) symlinkSync(own, join(theirs, 'node_modules'));
  }
  execFileSync(process.execPath, ['--import', 'tsx', join(dir, 'scripts', 'build.ts')], { cwd: ROOT, stdio: 'inherit' });
  return dir;
}
