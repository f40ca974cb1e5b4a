import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Context } from 'mocha';
import { MongoClient } from 'mongodb';
import { findExecutable, pendingOrRequired } from './executables';
import { freePort } from './redis-server';
import { stopChild } from './service-process';

/**
 * A MongoDB-wire server for one test file: `MONGODB_URI` when it is set (a real MongoDB, which
 * the tests cannot stop), otherwise a private FerretDB v1 on a free loopback port with its SQLite
 * handler, which the fault tests can stop and start again with its data intact.
 */
export interface MongoServer {
  readonly uri: string;
  /** What answers: `external` (MONGODB_URI) or `ferretdb`. */
  readonly kind: 'external' | 'ferretdb';
  /** The FerretDB process while it runs; undefined for an external server. */
  readonly pid?: number;
  /** A database name no other test uses, so counters and indexes start empty. */
  freshDatabase(): string;
  /** Stops the server; its data stays on disk. Only for `ferretdb`. */
  stop(): Promise<void>;
  /** Starts it again on the same port with the same data. Only for `ferretdb`. */
  restart(): Promise<void>;
  /** Stops it and removes its data. */
  close(): Promise<void>;
}

const READY_TIMEOUT_MS = 15_000;

/** `FERRETDB_BIN` if set, else `ferretdb` on PATH or where `.ci/install-ferretdb.sh` puts it. */
export function findFerretDb(): string | undefined {
  return findExecutable('FERRETDB_BIN', 'ferretdb', '/usr/local/bin/ferretdb');
}

/**
 * Starts (or finds) a MongoDB-wire server for a suite, or marks the suite pending with the reason
 * when there is none. With REQUIRE_MONGO=1 (CI) a missing server fails instead.
 */
export async function startMongoOrSkip(context: Context): Promise<MongoServer> {
  const uri = process.env.MONGODB_URI;
  if (uri !== undefined && uri !== '') return externalServer(uri);
  const binary =
    findFerretDb() ??
    pendingOrRequired(context, 'REQUIRE_MONGO', 'no MongoDB-wire server: MONGODB_URI is unset and ferretdb was not found (run .ci/install-ferretdb.sh or set FERRETDB_BIN)');
  return startFerretDb(binary);
}

/** Marks the current test pending when the server cannot be stopped by the tests. */
export function skipUnlessControllable(server: MongoServer, context: Context): void {
  if (server.kind === 'ferretdb') return;
  console.warn('      pending: MONGODB_URI names an external server, which these tests cannot stop and restart');
  context.skip();
}

function freshDatabase(): string {
  return `petstore_test_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
}

function externalServer(uri: string): MongoServer {
  const refuse = async (): Promise<void> => {
    throw new Error('an external MongoDB (MONGODB_URI) cannot be stopped by the tests');
  };
  return { uri, kind: 'external', freshDatabase, stop: refuse, restart: refuse, close: async () => undefined };
}

/**
 * A private FerretDB on a free loopback port, with its SQLite handler and a data directory of its
 * own; `args` are more of FerretDB's flags (authentication: {@link ferretDbAuthArgs}).
 */
export async function startFerretDb(binary: string, args: readonly string[] = []): Promise<MongoServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'petstore-ferretdb-'));
  let lastError: unknown;
  // The free port is found by binding and releasing it; another process could take it meanwhile.
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const port = await freePort();
    try {
      const handler = [...sqliteHandler(dataDir), ...args];
      let child: ChildProcess | undefined = await launchFerretDb(binary, port, dataDir, handler);
      const uri = `mongodb://127.0.0.1:${port}`;
      const stop = async (): Promise<void> => {
        if (child !== undefined) await stopChild(child);
        child = undefined;
      };
      return {
        uri,
        kind: 'ferretdb',
        get pid() {
          return child?.pid;
        },
        freshDatabase,
        stop,
        async restart() {
          await stop();
          child = await launchFerretDb(binary, port, dataDir, handler);
        },
        async close() {
          await stop();
          rmSync(dataDir, { recursive: true, force: true });
        },
      };
    } catch (error) {
      lastError = error;
    }
  }
  rmSync(dataDir, { recursive: true, force: true });
  throw lastError;
}

const sqliteHandler = (dataDir: string): string[] => ['--handler=sqlite', `--sqlite-url=file:${dataDir}/`];

/**
 * FerretDB 1.24's SCRAM authentication (behind a test flag), with a first user `username` in the
 * admin database: every command but the handshake then needs credentials. It has no roles: any
 * user it knows may do anything (docs/security.md says what that leaves unverified).
 */
export function ferretDbAuthArgs(username: string, password: string): string[] {
  return ['--test-enable-new-auth', '--setup-database=admin', `--setup-username=${username}`, `--setup-password=${password}`];
}

/**
 * Starts FerretDB on `port` with `handler`'s arguments (its backend: SQLite files, or a
 * PostgreSQL URL) and resolves once it answers a ping.
 */
export async function launchFerretDb(binary: string, port: number, stateDir: string, handler: readonly string[]): Promise<ChildProcess> {
  const child = spawn(
    binary,
    [
      ...handler,
      `--state-dir=${stateDir}`,
      `--listen-addr=127.0.0.1:${port}`,
      '--debug-addr=-',
      '--telemetry=disable',
      '--log-level=ERROR',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let output = '';
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`ferretdb exited (${child.exitCode}):\n${output}`);
    const client = new MongoClient(`mongodb://127.0.0.1:${port}`, { serverSelectionTimeoutMS: 250, connectTimeoutMS: 250 });
    try {
      await client.db('admin').command({ ping: 1 });
      return child;
    } catch (error) {
      // With authentication on, an answer refusing the anonymous ping is an answer all the same.
      if (/requires authentication/.test((error as Error).message)) return child;
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`ferretdb not ready in ${READY_TIMEOUT_MS} ms:\n${output}`, { cause: error });
      }
    } finally {
      await client.close();
    }
  }
}
