import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { UnaryTransportOptions } from '@petstore/proto';

const ROOT = join(__dirname, '..', '..', '..', '..', '..');
const MAIN = join(__dirname, 'transport-process-main.ts');

/** Metadata as plain data: each key's values, `-bin` ones as base64. */
export type MetadataJson = Array<[string, Array<string | { base64: string }>]>;

export interface CallRequest {
  readonly path: string;
  /** The request message, base64. */
  readonly request: string;
  readonly metadata: MetadataJson;
  /** The call's deadline, from when the transport process starts it. */
  readonly timeoutMs: number;
}

export type Request = { id: number } & (
  | { op: 'open'; target: string; options?: UnaryTransportOptions }
  | ({ op: 'call' } & CallRequest)
  | { op: 'inspect' }
  | { op: 'close' }
  | { op: 'discard' }
);

export type Response = { id: number; result: unknown } | { id: number; failure: string };

/** How a call ended, as the transport's promise settled, and when (ms after it was made). */
export type CallOutcome =
  | { ok: true; response: string; isBuffer: boolean; headers: MetadataJson[]; elapsedMs: number }
  | {
      ok: false;
      error: {
        isError: boolean;
        message: string;
        code: number;
        details: string;
        metadataIsMetadata: boolean;
        metadata: MetadataJson;
        /** fieldViolationOf(error.metadata), from @petstore/proto. */
        fieldViolation: { field: string; description: string } | null;
      };
      headers: MetadataJson[];
      elapsedMs: number;
    };

export interface Inspection {
  readonly state: string;
  readonly connections: Record<string, number>;
  /**
   * process.getActiveResourcesInfo(), sorted, then its sockets, lookups, file requests and timers
   * alive, unref'd ones included (`alive:TCPWRAP`, `alive:Timeout`, ...), from async_hooks.
   */
  readonly activeResources: string[];
}

/**
 * After close(), once its connections were gone and the resources back to the baseline, or after
 * the longest wait for them: the transport's state and connections then, and the process's
 * resources before the transport was made and then.
 */
export interface Closed extends Inspection {
  readonly baseline: string[];
}

/**
 * A child process holding one unary transport (transport-process-main.ts), driven over IPC: the
 * transport meets a misbehaving server in a process of its own, where an error it fails to catch
 * is a crash, not a test runner's report.
 */
export interface TransportProcess {
  open(target: string, options?: UnaryTransportOptions): Promise<{ baseline: string[] }>;
  call(request: CallRequest): Promise<CallOutcome>;
  inspect(): Promise<Inspection>;
  close(): Promise<Closed>;
  /**
   * Closes the transport if one is open and waits a little for its sockets to be gone, checking
   * nothing: after a test that failed midway, so that the next one starts from nothing.
   */
  discard(): Promise<void>;
  /** Whether it is still running; its exit code or signal once it is not. */
  exited(): { code: number | null; signal: NodeJS.Signals | null } | undefined;
  readonly stderr: readonly string[];
  /**
   * Disconnects, and resolves with how it exited: on its own, code 0, once nothing keeps it alive;
   * killed after `timeoutMs` otherwise (`killed`: something the transport left open kept it).
   */
  stop(timeoutMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; killed: boolean }>;
}

export async function startTransportProcess(): Promise<TransportProcess> {
  // tsx writes its compile cache asynchronously: off, so that no file write of its own shows among
  // the resources the transport is held to.
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', MAIN], {
    cwd: ROOT,
    env: { ...process.env, TSX_DISABLE_CACHE: '1' },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const stderr: string[] = [];
  createInterface({ input: child.stderr! }).on('line', (line) => stderr.push(line));
  createInterface({ input: child.stdout! }).on('line', (line) => stderr.push(`stdout: ${line}`));
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void; op: string }>();
  const exited = new Promise<void>((resolve) => {
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      for (const { reject, op } of pending.values()) {
        reject(new Error(`the transport process exited (code ${code}, signal ${signal}) during ${op}:\n${stderr.join('\n')}`));
      }
      pending.clear();
      resolve();
    });
  });
  child.on('message', (message: Response) => {
    const waiting = pending.get(message.id);
    if (waiting === undefined) return;
    pending.delete(message.id);
    if ('failure' in message) waiting.reject(new Error(`the transport process failed ${waiting.op}: ${message.failure}`));
    else waiting.resolve(message.result);
  });
  let next = 0;
  const send = <T>(op: Request['op'], fields: object = {}): Promise<T> => {
    if (exit !== undefined) return Promise.reject(new Error(`the transport process has exited (${JSON.stringify(exit)}):\n${stderr.join('\n')}`));
    next += 1;
    const id = next;
    return new Promise<T>((resolve, reject) => {
      pending.set(id, { resolve: resolve as (value: unknown) => void, reject, op });
      child.send({ id, op, ...fields });
    });
  };
  await new Promise<void>((resolve, reject) => {
    pending.set(0, { resolve: () => resolve(), reject, op: 'start-up' });
  });
  return {
    open: (target, options) => send('open', { target, options }),
    call: (request) => send('call', request),
    inspect: () => send('inspect'),
    close: () => send('close'),
    discard: () => (exit === undefined ? send('discard') : Promise.resolve()),
    exited: () => exit,
    stderr,
    stop: async (timeoutMs = 5_000) => {
      let killed = false;
      if (exit === undefined) {
        child.disconnect();
        const timer = setTimeout(() => {
          killed = true;
          child.kill('SIGKILL');
        }, timeoutMs);
        await exited;
        clearTimeout(timer);
      }
      return { ...exit!, killed };
    },
  };
}
