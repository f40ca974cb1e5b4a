import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readlinkSync, symlinkSync } from 'node:fs';
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
  // packages resolve to this checkout's node_modules.
  mkdirSync(join(ROOT, dir, 'node_modules', '@petstore'), { recursive: true });
  for (const name of readdirSync(join(ROOT, 'node_modules', '@petstore'))) {
    symlinkSync(readlinkSync(join(ROOT, 'node_modules', '@petstore', name)), join(ROOT, dir, 'node_modules', '@petstore', name));
  }
  execFileSync(process.execPath, ['--import', 'tsx', join(dir, 'scripts', 'build.ts')], { cwd: ROOT, stdio: 'inherit' });
  return dir;
}
