import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const ROOT = join(__dirname, '..', '..');
const ENTRY = {
  gateway: 'gateway/src/main.ts',
  'pet-service': 'pet-service/src/main.ts',
  'bare-server': 'bench/bare-server.ts',
  'feature-gateway': 'bench/feature-gateway.ts',
} as const;
/** What `npm run build` makes of each service. */
const COMPILED: Partial<Record<keyof typeof ENTRY, string>> = {
  gateway: 'gateway/dist/main.js',
  'pet-service': 'pet-service/dist/main.js',
};

/** How to run a service: from source through tsx (tests), or its build with Node flags (benchmarks). */
export interface Runtime {
  readonly compiled?: boolean;
  /**
   * A build to run instead of the service's own `dist/` (implies `compiled`), relative to the
   * repository root: a benchmark's baseline, built from an earlier commit.
   */
  readonly script?: string;
  readonly nodeFlags?: readonly string[];
  /** The Node binary; default the one running this process (the project's pinned runtime). */
  readonly node?: string;
  /**
   * An executable and its arguments, run instead of Node (the other fields are then ignored): a
   * benchmark's peer written in another language, which prints the same `listening` line.
   */
  readonly command?: readonly [string, ...string[]];
}

/**
 * How long a service process may take to say that it listens, or to refuse its configuration: no
 * product figure, only a bound on a hang. From source, a start compiles the TypeScript it loads
 * (tsx), which on a busy 2-core machine takes several seconds, three started at once over 10 s.
 */
export const STARTUP_TIMEOUT_MS = 60_000;

/** One JSON log line as a service printed it. */
export type LogLine = Record<string, unknown>;

/** A service started as its own OS process with `main.ts`, as in production. */
export interface ServiceProcess {
  readonly child: ChildProcess;
  readonly port: number;
  readonly adminPort: number;
  /** The line that announced it was listening. */
  readonly listening: LogLine;
  /** Every stdout line so far: raw, and parsed. */
  readonly lines: string[];
  readonly logs: LogLine[];
  /** Every stderr line so far. */
  readonly errorLines: string[];
  /** Resolves with the first log line (already printed or still to come) that matches. */
  waitForLog(matches: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  /** Sends `signal` and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts a service on free ports (PORT=0 / PET_SERVICE_PORT=0 unless `env` says otherwise) and
 * resolves once it logs that it is listening, with the ports it logged.
 */
export async function startService(name: keyof typeof ENTRY, env?: NodeJS.ProcessEnv, runtime?: Runtime): Promise<ServiceProcess>;
/** Any other build of the repository (`runtime.script`), called `name` in errors: a benchmark's own servers. */
export async function startService(name: string, env: NodeJS.ProcessEnv, runtime: Runtime & { readonly script: string }): Promise<ServiceProcess>;
/** Any other executable (`runtime.command`), called `name` in errors. */
export async function startService(name: string, env: NodeJS.ProcessEnv, runtime: Runtime & { readonly command: readonly [string, ...string[]] }): Promise<ServiceProcess>;
export async function startService(name: string, env: NodeJS.ProcessEnv = {}, runtime: Runtime = {}): Promise<ServiceProcess> {
  const service = name as keyof typeof ENTRY;
  const compiled = runtime.script ?? (runtime.compiled === true ? COMPILED[service] : undefined);
  const node = [runtime.node ?? process.execPath, ...(runtime.nodeFlags ?? [])];
  // Sources run on Node itself with the tsx loader, not the tsx CLI: one process, so a signal
  // reaches the service.
  const [file, ...argv] =
    runtime.command ??
    (compiled === undefined ? [...node, '--import', 'tsx', join(ROOT, ENTRY[service])] : [...node, '--enable-source-maps', join(ROOT, compiled)]);
  const child = spawn(file, argv, {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', PET_SERVICE_PORT: '0', ADMIN_PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.set(child, name);
  child.once('exit', () => running.delete(child));
  const lines: string[] = [];
  const logs: LogLine[] = [];
  const waiters = new Set<{ matches: (line: LogLine) => boolean; resolve: (line: LogLine) => void }>();
  let stderr = '';
  const errorLines: string[] = [];
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  createInterface({ input: child.stderr! }).on('line', (text) => errorLines.push(text));
  createInterface({ input: child.stdout! }).on('line', (text) => {
    lines.push(text);
    let line: LogLine;
    try {
      line = JSON.parse(text) as LogLine;
    } catch {
      line = { msg: text };
    }
    logs.push(line);
    for (const waiter of waiters) {
      if (waiter.matches(line)) {
        waiters.delete(waiter);
        waiter.resolve(line);
      }
    }
  });
  const exited = once(child, 'exit');
  exited.catch(() => undefined);

  const waitForLog = (matches: (line: LogLine) => boolean, timeoutMs = 15_000): Promise<LogLine> => {
    const found = logs.find(matches);
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const waiter = { matches, resolve };
      waiters.add(waiter);
      const timer = setTimeout(() => {
        waiters.delete(waiter);
        reject(new Error(`${name}: no matching log line in ${timeoutMs} ms; stderr: ${stderr}; logs: ${JSON.stringify(logs)}`));
      }, timeoutMs);
      void exited.then(() => {
        if (!waiters.has(waiter)) return;
        clearTimeout(timer);
        waiters.delete(waiter);
        reject(new Error(`${name} exited; stderr: ${stderr}; logs: ${JSON.stringify(logs)}`));
      });
      const original = waiter.resolve;
      waiter.resolve = (line) => {
        clearTimeout(timer);
        original(line);
      };
    });
  };

  let listening: LogLine;
  try {
    listening = await waitForLog(isListeningLine, STARTUP_TIMEOUT_MS);
  } catch (error) {
    // A service that never said it listens is still the test's to stop: left running it would
    // hold its ports and CPU after the suite.
    await stopChild(child, 'SIGKILL');
    throw error;
  }
  return {
    child,
    port: Number(listening.port),
    adminPort: Number(listening.adminPort),
    listening,
    lines,
    logs,
    errorLines,
    waitForLog,
    stop: (signal) => stopChild(child, signal),
  };
}

/** Every process {@link startService} started that has not exited yet, with its name. */
const running = new Map<ChildProcess, string>();

/**
 * Kills (SIGKILL) every process {@link startService} started that is still running, and resolves
 * with their names and PIDs: none, when every suite stopped what it started. The test run's last
 * hook (`root-hooks.ts`) calls it, so that a suite that failed before it could stop its processes
 * fails the run instead of keeping mocha waiting on them.
 */
export async function killLeftoverServices(): Promise<string[]> {
  const left = [...running].map(([child, name]) => ({ child, label: `${name} (pid ${child.pid})` }));
  await Promise.all(left.map(({ child }) => stopChild(child, 'SIGKILL')));
  return left.map(({ label }) => label);
}

const isListeningLine = (line: LogLine): boolean => typeof line.msg === 'string' && line.msg.endsWith('listening');

/** How a service that was expected to refuse its configuration ended. */
export interface Refusal {
  /** The exit code; null when it was killed because it served instead (or hung). */
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs a service's `main.ts` (`PORT`, `PET_SERVICE_PORT` and `ADMIN_PORT` 0 unless `env` says
 * otherwise) that is expected to refuse its configuration, and resolves once it has exited and its
 * output is read to the end. One that says it listens instead is killed at once: it serves, which
 * is the failure the caller looks for (status null, and no refusal on stderr); so is one that
 * neither refuses nor listens within {@link STARTUP_TIMEOUT_MS}.
 */
export function runToRefusal(name: 'gateway' | 'pet-service', env: NodeJS.ProcessEnv): Promise<Refusal> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, ENTRY[name])], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', PET_SERVICE_PORT: '0', ADMIN_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  createInterface({ input: child.stdout }).on('line', (text) => {
    try {
      if (isListeningLine(JSON.parse(text) as LogLine)) child.kill('SIGKILL');
    } catch {
      // Not a log line: the caller's to judge.
    }
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), STARTUP_TIMEOUT_MS);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

/**
 * Milliseconds from the service's first log line `from` to its first line `to` after it, by the
 * service's own clock (pino's `time`), once its output is read to the end: how long the service
 * took between two steps, without the time a busy machine takes to deliver a signal, end a process
 * or pass its lines on.
 */
export async function loggedInterval(service: ServiceProcess, from: string, to: string): Promise<number> {
  const stdout = service.child.stdout!;
  if (!stdout.closed) await once(stdout, 'close');
  const start = service.logs.findIndex((line) => line.msg === from);
  const end = service.logs.findIndex((line, index) => index > start && line.msg === to);
  if (start === -1 || end === -1) throw new Error(`${from} … ${to}: not both logged: ${JSON.stringify(service.logs)}`);
  return Number(service.logs[end]!.time) - Number(service.logs[start]!.time);
}

/** Sends `signal` (default SIGTERM) and resolves with the exit code once the child has exited. */
export async function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = once(child, 'exit');
  child.kill(signal);
  const [code] = (await exited) as [number | null];
  return code;
}
