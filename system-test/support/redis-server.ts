import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import type { Context } from 'mocha';
import { findExecutable, pendingOrRequired } from './executables';
import { stopChild } from './service-process';

/** A private redis-server on a loopback port, for one test file. */
export interface RedisServer {
  readonly port: number;
  readonly url: string;
  /** The running server's process id (it changes on restart). */
  readonly pid: number;
  /** Stops the server with `signal` (default SIGTERM); its data is gone: nothing is persisted. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port. */
  restart(): Promise<void>;
}

const READY_TIMEOUT_MS = 10_000;

/** `REDIS_SERVER_BIN` if set, else `redis-server` on PATH or at Debian's path; undefined when none exists. */
export function findRedisServer(): string | undefined {
  return findExecutable('REDIS_SERVER_BIN', 'redis-server', '/usr/bin/redis-server');
}

/**
 * Starts a private Redis for a suite, or marks the suite pending when the binary is missing, with
 * the reason on stderr. With REQUIRE_REDIS=1 (CI) a missing binary fails instead.
 */
export function startRedisOrSkip(context: Context): Promise<RedisServer> {
  const binary = findRedisServer() ?? pendingOrRequired(context, 'REQUIRE_REDIS', 'redis-server not found (install Debian package redis-server or set REDIS_SERVER_BIN)');
  return startRedisServer(binary);
}

/** How to run redis-server beyond a private, unpersisted server on a loopback port. */
export interface RedisServerOptions {
  /** A configuration file, read first (Sentinel needs one it can write to). */
  readonly configFile?: string;
  /** More arguments, after the defaults, e.g. `['--cluster-enabled', 'yes']` or `['--sentinel']`. */
  readonly args?: readonly string[];
  /** What it prints once it serves; default Redis's `Ready to accept connections` (a Sentinel prints none). */
  readonly readyText?: string;
  /**
   * A program that execs redis-server with the arguments after its own (a deployment's start
   * script: `['sh', 'deploy/base/redis-start.sh']`), run instead of the binary, with `env` added.
   */
  readonly launcher?: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
}

/** Starts redis-server on `port` or a free loopback port and resolves once it answers PING. */
export async function startRedisServer(binary: string, port?: number, options: RedisServerOptions = {}): Promise<RedisServer> {
  let lastError: unknown;
  // The free port is found by binding and releasing it; another process could take it meanwhile.
  for (let attempt = 0; attempt < (port === undefined ? 3 : 1); attempt += 1) {
    const listenPort = port ?? (await freePort());
    try {
      let child = await launch(binary, listenPort, options);
      return {
        port: listenPort,
        url: `redis://127.0.0.1:${listenPort}`,
        get pid() {
          return child.pid!;
        },
        stop: async (signal) => {
          await stopChild(child, signal);
        },
        async restart() {
          await stopChild(child);
          child = await launch(binary, listenPort, options);
        },
      };
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

async function launch(binary: string, port: number, options: RedisServerOptions): Promise<ChildProcess> {
  const readyText = options.readyText ?? 'Ready to accept connections';
  // Nothing is saved, but a replica writes the snapshot it receives to its directory: the
  // working directory unless told otherwise, which would be the repository.
  const child = spawn(
    options.launcher?.[0] ?? binary,
    [
      ...(options.launcher?.slice(1) ?? []),
      ...(options.configFile === undefined ? [] : [options.configFile]),
      ...['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'],
      ...(options.args ?? []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], cwd: tmpdir(), ...(options.env === undefined ? {} : { env: { ...process.env, ...options.env } }) },
  );
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`redis-server not ready in ${READY_TIMEOUT_MS} ms:\n${output}`)), READY_TIMEOUT_MS);
    const onExit = (code: number | null): void => fail(new Error(`redis-server exited (${code}):\n${output}`));
    function fail(error: Error): void {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    }
    child.once('exit', onExit);
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (!output.includes(readyText)) return;
      child.stdout!.removeAllListeners('data');
      child.stdout!.resume();
      clearTimeout(timer);
      child.off('exit', onExit);
      resolve();
    });
  });
  child.stderr!.resume();
  try {
    await ping(port);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return child;
}

function ping(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = new Socket();
    socket.setTimeout(2000, () => socket.destroy(new Error('PING timed out')));
    socket.once('error', reject);
    socket.connect(port, '127.0.0.1', () => socket.write('PING\r\n'));
    socket.once('data', (data) => {
      socket.end();
      // A server with a password answers NOAUTH: it serves all the same.
      if (/^(\+PONG|-NOAUTH)/.test(data.toString())) resolve();
      else reject(new Error(`unexpected PING reply: ${data.toString()}`));
    });
  });
}

/** A TCP port that was free on 127.0.0.1 a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Commands Redis has executed, from INFO commandstats, not counting INFO itself. */
export async function commandCalls(client: { info(section: string): Promise<string> }): Promise<Map<string, number>> {
  const calls = new Map<string, number>();
  for (const match of (await client.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (match[1] !== 'info') calls.set(match[1]!, Number(match[2]));
  }
  return calls;
}

/** Total of {@link commandCalls}. */
export async function totalCommandCalls(client: { info(section: string): Promise<string> }): Promise<number> {
  let total = 0;
  for (const count of (await commandCalls(client)).values()) total += count;
  return total;
}
