import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { accessSync, chownSync, constants, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { findFerretDb, launchFerretDb } from './mongo-server';
import { freePort } from './redis-server';
import { stopChild } from './service-process';

/** A private PostgreSQL with FerretDB's PostgreSQL handler in front of it. */
export interface FerretDbOnPostgres {
  /** The MongoDB-wire URI of the FerretDB. */
  readonly uri: string;
  /** Stops both and removes their data. */
  close(): Promise<void>;
}

const READY_TIMEOUT_MS = 30_000;

/** `initdb`, `postgres` and `pg_isready` from Debian's /usr/lib/postgresql/<version>/bin or PATH. */
function findPostgres(): { initdb: string; postgres: string; pgIsReady: string } | undefined {
  let versions: string[] = [];
  try {
    versions = readdirSync('/usr/lib/postgresql').sort().reverse();
  } catch {
    // not Debian's package; PATH may still have them
  }
  const dirs = [...versions.map((version) => join('/usr/lib/postgresql', version, 'bin')), ...(process.env.PATH ?? '').split(delimiter)];
  const find = (name: string): string | undefined =>
    dirs.map((dir) => join(dir, name)).find((path) => {
      try {
        accessSync(path, constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
  const [initdb, postgres, pgIsReady] = [find('initdb'), find('postgres'), find('pg_isready')];
  return initdb === undefined || postgres === undefined || pgIsReady === undefined ? undefined : { initdb, postgres, pgIsReady };
}

/** PostgreSQL refuses to run as root: as root, it runs as the `postgres` account Debian's package makes. */
function postgresAccount(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('postgres:'));
  if (line === undefined) throw new Error('running as root, and there is no postgres account to run PostgreSQL as');
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/**
 * Starts PostgreSQL (from Debian's `postgresql` package) in a temporary directory on a free
 * loopback port, and FerretDB's PostgreSQL handler on it; throws, saying what is missing, when
 * either program is not installed.
 */
export async function startFerretDbOnPostgres(): Promise<FerretDbOnPostgres> {
  const programs = findPostgres();
  const ferretdb = findFerretDb();
  if (programs === undefined) throw new Error('PostgreSQL is not installed (apt-get install postgresql)');
  if (ferretdb === undefined) throw new Error('ferretdb was not found (run .ci/install-ferretdb.sh)');
  const account = postgresAccount();
  const dir = mkdtempSync(join(tmpdir(), 'petstore-postgres-'));
  if (account !== undefined) chownSync(dir, account.uid, account.gid);
  const as = account ?? {};
  let postgres: ChildProcess | undefined;
  let ferret: ChildProcess | undefined;
  const close = async (): Promise<void> => {
    if (ferret !== undefined) await stopChild(ferret);
    if (postgres !== undefined) await stopChild(postgres, 'SIGINT'); // fast shutdown
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const init = spawnSync(programs.initdb, ['-D', join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '--no-sync'], { ...as, encoding: 'utf8' });
    if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
    const port = await freePort();
    postgres = spawn(programs.postgres, ['-D', join(dir, 'data'), '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1'], {
      ...as,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let output = '';
    postgres.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (spawnSync(programs.pgIsReady, ['-q', '-h', '127.0.0.1', '-p', String(port)]).status !== 0) {
      if (postgres.exitCode !== null || Date.now() > deadline) throw new Error(`postgres did not start:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const ferretPort = await freePort();
    ferret = await launchFerretDb(ferretdb, ferretPort, dir, ['--handler=pg', `--postgresql-url=postgres://postgres@127.0.0.1:${port}/postgres`]);
    return { uri: `mongodb://127.0.0.1:${ferretPort}`, close };
  } catch (error) {
    await close();
    throw error;
  }
}
