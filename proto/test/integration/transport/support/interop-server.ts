import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Context } from 'mocha';
import { findExecutable, pendingOrRequired } from '../../../../../system-test/support/executables';

/** Where .ci/install-grpc-interop.sh puts the server and grpc-go's test certificates. */
const DEFAULT_BIN = '/usr/local/bin/grpc-interop-server';
const DEFAULT_DIR = '/usr/local/share/grpc-interop';
const INSTALL = 'run .ci/install-grpc-interop.sh';

/** grpc-go's testdata files: the server's certificate and key, and the CA the client trusts. */
export interface InteropFiles {
  readonly bin: string;
  readonly certFile: string;
  readonly keyFile: string;
  readonly caFile: string;
}

/**
 * A name in the server certificate's DNS SANs (`*.test.google.fr`), for the client's server name
 * override: grpc-go's own interop client uses this one.
 */
export const INTEROP_SERVER_NAME = 'foo.test.google.fr';

/**
 * The interop server and its certificates (`GRPC_INTEROP_BIN`, `GRPC_INTEROP_DIR`, as the install
 * script names them), or the suite pending with the reason; a failure where CI sets
 * REQUIRE_GRPC_INTEROP=1.
 */
export function interopFilesOrSkip(context: Context): InteropFiles {
  const bin = findExecutable('GRPC_INTEROP_BIN', 'grpc-interop-server', DEFAULT_BIN);
  if (bin === undefined) return pendingOrRequired(context, 'REQUIRE_GRPC_INTEROP', `grpc-go's interop server not found (${INSTALL} or set GRPC_INTEROP_BIN)`);
  const dir = process.env.GRPC_INTEROP_DIR || DEFAULT_DIR;
  const files = { bin, certFile: join(dir, 'server1.pem'), keyFile: join(dir, 'server1.key'), caFile: join(dir, 'ca.pem') };
  for (const file of [files.certFile, files.keyFile, files.caFile]) {
    try {
      accessSync(file, constants.R_OK);
    } catch {
      return pendingOrRequired(context, 'REQUIRE_GRPC_INTEROP', `${file} is missing (${INSTALL} or set GRPC_INTEROP_DIR)`);
    }
  }
  return files;
}

export interface InteropServer {
  readonly port: number;
  /** Its log so far, for a failure's message. */
  readonly log: readonly string[];
  stop(): Promise<void>;
}

const LISTENING = /interop server listening on .*:(\d+)$/;

/**
 * Starts grpc-go's interop server on a free port (`--port=0`; the port is read from its log line,
 * which grpc-go prints at INFO) and resolves once it listens, or rejects within `timeoutMs`.
 */
export async function startInteropServer(files: InteropFiles, useTls: boolean, timeoutMs = 10_000): Promise<InteropServer> {
  const args = ['--port=0'];
  if (useTls) args.push('--use_tls=true', `--tls_cert_file=${files.certFile}`, `--tls_key_file=${files.keyFile}`);
  const child = spawn(files.bin, args, {
    env: { ...process.env, GRPC_GO_LOG_SEVERITY_LEVEL: 'info', GRPC_GO_LOG_VERBOSITY_LEVEL: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log: string[] = [];
  // Kept bounded: grpc-go logs a few lines per connection at INFO.
  const keep = (line: string): void => {
    log.push(line);
    if (log.length > 200) log.splice(0, log.length - 200);
  };
  createInterface({ input: child.stdout! }).on('line', keep);
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`grpc-go's interop server did not listen within ${timeoutMs} ms:\n${log.join('\n')}`)), timeoutMs);
    const exited = (code: number | null): void => fail(new Error(`grpc-go's interop server exited (${code}) before listening:\n${log.join('\n')}`));
    const fail = (error: Error): void => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    };
    child.once('exit', exited);
    child.once('error', fail);
    createInterface({ input: child.stderr! }).on('line', (line) => {
      keep(line);
      const match = LISTENING.exec(line);
      if (match === null) return;
      clearTimeout(timer);
      child.off('exit', exited);
      resolve(Number(match[1]));
    });
  });
  return { port, log, stop: () => stop(child) };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}
