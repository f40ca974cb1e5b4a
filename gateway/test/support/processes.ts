import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const ROOT = join(__dirname, '..', '..', '..');
const TSX = join(ROOT, 'node_modules', '.bin', 'tsx');
const START_TIMEOUT_MS = 15_000;

/** A service running in its own process, as in production. */
export interface ServiceProcess {
  /** From the `"port"` field of its listening line. */
  readonly port: number;
  /** That whole line, parsed. */
  readonly listening: Readonly<Record<string, unknown>>;
  /** Every stdout line so far. */
  readonly lines: readonly string[];
  stop(): Promise<void>;
}

/**
 * Runs `entry` (relative to the repository root) with tsx and resolves once it prints a JSON line
 * with a `port` field; rejects with its output if it exits or stays silent for 15 s.
 */
export function startProcess(entry: string, env: NodeJS.ProcessEnv): Promise<ServiceProcess> {
  const child = spawn(TSX, [join(ROOT, entry)], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    const fail = (reason: string): void => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`${entry} ${reason}\nstdout:\n${lines.join('\n')}\nstderr:\n${stderr}`));
    };
    const timer = setTimeout(() => fail(`printed no port within ${START_TIMEOUT_MS} ms`), START_TIMEOUT_MS);
    const onExit = (code: number | null): void => fail(`exited (${code}) before listening`);
    child.once('exit', onExit);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      lines.push(line);
      const listening = parseListening(line);
      if (listening === undefined) return;
      clearTimeout(timer);
      child.off('exit', onExit);
      resolve({ port: listening.port as number, listening, lines, stop: () => stopChild(child) });
    });
  });
}

function parseListening(line: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(line);
    const port = (parsed as { port?: unknown } | null)?.port;
    return typeof port === 'number' ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Sends SIGTERM and resolves when the child has exited. */
export function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/** The pet service on a free port, with the in-memory store. */
export function startPetServiceProcess(env: NodeJS.ProcessEnv = {}): Promise<ServiceProcess> {
  return startProcess('pet-service/src/main.ts', { PET_SERVICE_HOST: '127.0.0.1', PET_SERVICE_PORT: '0', MONGODB_URI: '', ...env });
}

/** A gateway on free public and admin ports. */
export function startGatewayProcess(env: NodeJS.ProcessEnv): Promise<ServiceProcess> {
  return startProcess('gateway/src/main.ts', { HOST: '127.0.0.1', PORT: '0', ADMIN_PORT: '0', ...env });
}
