import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { connect as connectTcp, createServer as createTcpServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { connect as connectHttp2 } from 'node:http2';
import { connectOutcome, holdCall, roundTrip } from './held-calls';
import { waitFor } from './wait-for';

const ROOT = join(__dirname, '..', '..');
/** A demo key every gateway started with its default keys file knows. */
export const DEMO_KEY = 'demo-free-key-0000';

export interface Started {
  readonly child: ChildProcess;
  readonly lines: string[];
  /** Every line so far, each after the milliseconds since the command was started. */
  transcript(): string;
  /**
   * Resolves with the exit code and signal once the process has exited and its output has all been
   * read: `exit` can come before the last lines are, which a test reading `lines` then misses on a
   * busy machine.
   */
  readonly closed: Promise<[number | null, NodeJS.Signals | null]>;
  /** Resolves once a line of output contains `text`. */
  waitForLine(text: string): Promise<void>;
}

/**
 * Runs a documented command as a user would, from the repository root, capturing its output;
 * `detached`: in a process group of its own, as a terminal's foreground job is.
 */
export function run(command: string, args: readonly string[], env: NodeJS.ProcessEnv, { detached = false } = {}): Started {
  const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached });
  const startedAt = Date.now();
  const lines: string[] = [];
  const timed: string[] = [`+0 ms $ ${command} ${args.join(' ')}`];
  child.on('exit', (code, signal) => timed.push(`+${Date.now() - startedAt} ms exited ${signal ?? code}`));
  const waiters: Array<{ text: string; resolve: () => void }> = [];
  for (const stream of [child.stdout!, child.stderr!]) {
    createInterface({ input: stream }).on('line', (line) => {
      lines.push(line);
      timed.push(`+${Date.now() - startedAt} ms ${line}`);
      for (const waiter of waiters.filter(({ text }) => line.includes(text))) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    });
  }
  const started: Started = {
    child,
    lines,
    transcript: () => timed.join('\n'),
    closed: once(child, 'close') as Promise<[number | null, NodeJS.Signals | null]>,
    waitForLine: (text) =>
      lines.some((line) => line.includes(text))
        ? Promise.resolve()
        : new Promise((resolve, reject) => {
            waiters.push({ text, resolve });
            child.once('exit', () => reject(new Error(`exited before printing "${text}":\n${lines.join('\n')}`)));
          }),
  };
  runsOfThisTest.push(started);
  return started;
}

const runsOfThisTest: Started[] = [];

/**
 * For the enclosing suite: after a test that failed, prints what every command it ran printed, each
 * line with its time, so that a failure on a machine nobody can log into (a timeout says only that
 * something waited) shows how far each command got.
 */
export function printCommandsOfFailedTests(): void {
  beforeEach(() => {
    runsOfThisTest.length = 0;
  });
  afterEach(function () {
    if (this.currentTest?.state !== 'failed') return;
    for (const run of runsOfThisTest) console.log(`      ${run.transcript().split('\n').join('\n      ')}`);
  });
}

/**
 * A POST whose headers and half its body have reached the gateway: in flight until `finish` sends
 * the rest, and then answered. Resolves with the status line and the response headers.
 */
export async function holdHttpRequest(port: number): Promise<{ finish(): Promise<string> }> {
  const body = JSON.stringify({ name: 'in flight', categoryId: 1 });
  const socket: Socket = connectTcp(port, '127.0.0.1');
  await once(socket, 'connect');
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
  socket.on('error', () => undefined);
  // From now on: a gateway that closed the connection before `finish` (issue 45: it reset one whose
  // request it had not read yet) must not leave `finish` waiting for an event already past.
  const ended = Promise.race([once(socket, 'end'), once(socket, 'close')]);
  socket.write(
    `POST /v1/pets HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${DEMO_KEY}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`,
  );
  return {
    async finish() {
      if (!socket.destroyed) socket.write(body.slice(10));
      await ended;
      return received.split('\r\n\r\n')[0]!;
    },
  };
}

/** Resolves once every port refuses connections: the process behind them is gone. */
export async function expectClosed(...ports: number[]): Promise<void> {
  await waitFor(async () => (await Promise.all(ports.map(connectOutcome))).every((outcome) => outcome === 'ECONNREFUSED'), 5000);
}

/** What a signalled process did: the held call's gRPC status, and its exit code and signal. */
export interface Drained {
  readonly call: string;
  readonly exit: [number | null, NodeJS.Signals | null];
}

/**
 * Holds a ListPets call in flight on the pet service behind `started` (listening on `port`), sends
 * the signal (`signal`: by default SIGTERM to the started process), then lets the call finish.
 */
export async function signalWithCallInFlight(
  started: Started,
  port: number,
  signal: { readonly name: NodeJS.Signals; send(started: Started): void } = { name: 'SIGTERM', send: (it) => it.child.kill('SIGTERM') },
): Promise<Drained> {
  const session = connectHttp2(`http://127.0.0.1:${port}`);
  session.on('error', () => undefined);
  try {
    await once(session, 'connect');
    const call = holdCall(session);
    await roundTrip(session);
    const exited = once(started.child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    signal.send(started);
    await started.waitForLine(`"signal":"${signal.name}"`);
    return { call: await call.send(), exit: await exited };
  } finally {
    session.destroy();
  }
}

/** A process as Linux's /proc shows it. */
export interface ProcessEntry {
  readonly pid: number;
  readonly ppid: number;
  /** Its command line, arguments joined by spaces. */
  readonly command: string;
}

/** What /proc says of `pid`, or `undefined` when it has exited (a zombie counts as exited). */
function processEntry(pid: number): ProcessEntry | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (state === 'Z') return undefined;
    const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
    return { pid, ppid: Number(ppid), command };
  } catch {
    return undefined;
  }
}

/** `pid` and every live process below it (Linux: read from /proc). */
export function processTree(pid: number): ProcessEntry[] {
  const all = readdirSync('/proc')
    .filter((name) => /^[0-9]+$/.test(name))
    .map((name) => processEntry(Number(name)))
    .filter((entry) => entry !== undefined);
  const tree = all.filter((entry) => entry.pid === pid);
  for (let index = 0; index < tree.length; index += 1) tree.push(...all.filter((entry) => entry.ppid === tree[index]!.pid));
  return tree;
}

/** Whether `pid` is still running (not exited, not a zombie). */
export function isRunning(pid: number): boolean {
  return processEntry(pid) !== undefined;
}

/** Whether a listener could bind `port` on every IPv4 interface now, as the services do by default. */
function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createTcpServer();
    server.once('error', () => resolve(false));
    server.listen(port, '0.0.0.0', () => server.close(() => resolve(true)));
  });
}

/** Resolves once every port can be bound again: nothing holds it, whoever held it is gone. */
export async function expectFree(...ports: number[]): Promise<void> {
  await waitFor(async () => (await Promise.all(ports.map(canBind))).every(Boolean), 10_000, () => `ports ${ports.join(', ')}`);
}
