/**
 * `npm run test:contention [-- <test files>]`: the tests on a busy host, as a new CI machine or a
 * shared one is. Runs `npm test` (or, given files, mocha on those files alone, as
 * `npm run test:file` does) beside a load like the cluster binaries' Go build:
 *
 * - CPU, disk and memory of a real Go build: `go build -a std` again and again, each time into an
 *   empty build cache of its own (every core compiling, the cache written to disk, a few hundred
 *   MB of compiler memory);
 * - disk: a writer that rewrites a 64 MiB file and syncs it, again and again;
 * - memory: a process that fills 1 GiB, lets it go and fills it again, evicting the page cache
 *   the suites' processes start from.
 *
 * At nice 19 by default, as CI ran the cluster build beside the suites before issue 45
 * (`CONTENTION_NICE=0`: a load that competes as an equal). Each load process leads a process group
 * of its own, stopped by its PID when the tests end, however they end; the temporary files go with
 * them. Exits with the tests' exit code. Needs `go` on PATH.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(__dirname, '..');
const nice = process.env.CONTENTION_NICE ?? '19';
if (!/^(?:[0-9]|1[0-9])$/.test(nice)) {
  console.error(`CONTENTION_NICE ${nice}: must be an integer from 0 to 19`);
  process.exit(1);
}
if (spawnSync('go', ['version']).status !== 0) {
  console.error('go: not found on PATH; the contention mode runs a Go build beside the tests');
  process.exit(1);
}

const scratch = mkdtempSync(join(tmpdir(), 'petstore-contention-'));
const node = process.execPath;
/** Each load, as a shell loop or a Node program, run under `nice`. */
const loads: Record<string, string[]> = {
  'go build -a std': [
    'bash',
    '-c',
    // A new cache each time: `-a` alone still reads the cache's compiled standard library.
    `n=0; while :; do d=$(mktemp -d "${scratch}/gocache.XXXXXX"); GOCACHE="$d" GOFLAGS= go build -a std >/dev/null 2>&1; rm -rf "$d"; n=$((n+1)); echo "$n" >"${scratch}/builds"; done`,
  ],
  'disk writer': [
    node,
    '-e',
    `const fs = require('node:fs'); const chunk = Buffer.alloc(1 << 20, 7); for (;;) { const fd = fs.openSync(${JSON.stringify(join(scratch, 'disk'))}, 'w'); for (let i = 0; i < 64; i += 1) fs.writeSync(fd, chunk); fs.fsyncSync(fd); fs.closeSync(fd); }`,
  ],
  'memory churn': [node, '-e', `for (;;) { const b = Buffer.allocUnsafe(1 << 30); for (let i = 0; i < b.length; i += 4096) b[i] = i & 255; }`],
};

const running: ChildProcess[] = Object.entries(loads).map(([name, [command, ...args]]) => {
  const child = spawn('nice', ['-n', nice, command!, ...args], { stdio: 'ignore', detached: true });
  child.on('error', (error) => console.error(`contention: ${name} failed to start: ${error.message}`));
  return child;
});

let stopped = false;
function stopLoad(): void {
  if (stopped) return;
  stopped = true;
  for (const child of running) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  let builds = '0';
  try {
    builds = readFileSync(join(scratch, 'builds'), 'utf8').trim();
  } catch {
    // None finished.
  }
  rmSync(scratch, { recursive: true, force: true });
  console.log(`contention: stopped; ${builds} whole Go builds of std ran beside the tests; load average ${loadavg().map((value) => value.toFixed(1)).join(' ')}`);
}
process.on('exit', stopLoad);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    stopLoad();
    process.exit(1);
  });
}

const files = process.argv.slice(2);
console.log(`contention: ${Object.keys(loads).join(', ')} at nice ${nice}; running ${files.length === 0 ? 'npm test' : files.join(' ')}`);
const tests =
  files.length === 0
    ? spawn('npm', ['test'], { cwd: root, stdio: 'inherit' })
    : spawn('npm', ['run', 'test:file', '--', ...files], { cwd: root, stdio: 'inherit' });
tests.on('exit', (code, signal) => {
  stopLoad();
  process.exit(code ?? (signal === null ? 1 : 128));
});
