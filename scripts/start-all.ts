/**
 * `npm start`: the pet service and the gateway with embedded defaults (in-memory store, in-memory
 * limits, demo keys), each in its own process as in production. Stops both when either exits; on
 * SIGINT, SIGTERM or SIGHUP (the terminal closed); and when the process that started it (npm) is
 * gone. It passes the stop on as SIGTERM: to the gateway first and to the pet service once the
 * gateway has exited, so requests in flight through the gateway still reach the pet service. It
 * exits once both have, non-zero if either did. Should this launcher itself die without stopping
 * them (SIGKILL), each service sees its IPC channel to it close and shuts down as on SIGTERM.
 * The pet service gets PET_SERVICE_PORT and PET_SERVICE_ADMIN_PORT (default 9091), its own name
 * for its admin port: both services read ADMIN_PORT, which is the gateway's here.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

const root = join(__dirname, '..');
const petServicePort = process.env.PET_SERVICE_PORT ?? '50051';
/** How often the launcher looks whether its own parent is still there. */
const PARENT_CHECK_MS = 500;

function start(name: string, entry: string, env: NodeJS.ProcessEnv): ChildProcess {
  // Node itself with tsx as a loader, not the tsx CLI: one process per service, so the SIGTERM
  // sent below reaches the server rather than a wrapper. Each in a process group of its own: Ctrl-C
  // in a terminal signals the whole foreground group, which would stop both services at once
  // rather than in the order below, and a closed terminal's SIGHUP, which the gateway takes as
  // "reload the keys file". The IPC channel is the services' lifeline: it closes when this
  // process dies, however it dies.
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, entry)], {
    env: { ...process.env, ...env },
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    detached: true,
  });
  child.on('exit', (code, signal) => {
    process.exitCode = Math.max(Number(process.exitCode ?? 0), code ?? 1);
    if (!stopping) console.error(`${name} exited (${signal ?? code}); stopping`);
    shutdown();
  });
  return child;
}

// In start-up order; they are stopped in the reverse order.
const children = [
  start('pet-service', 'pet-service/src/main.ts', {
    PET_SERVICE_PORT: petServicePort,
    PET_SERVICE_ADMIN_PORT: process.env.PET_SERVICE_ADMIN_PORT ?? '9091',
  }),
  start('gateway', 'gateway/src/main.ts', { PET_SERVICE_ADDR: process.env.PET_SERVICE_ADDR ?? `localhost:${petServicePort}` }),
];

// npm gives this process no channel, and Linux tells no child of its parent's death: a parent id
// that changed means the parent is gone (SIGKILLed, say) and this process was adopted.
const parentId = process.ppid;
const parentCheck = setInterval(() => {
  if (process.ppid !== parentId) shutdown();
}, PARENT_CHECK_MS);

let stopping = false;
function shutdown(): void {
  if (stopping) return;
  stopping = true;
  clearInterval(parentCheck);
  const running = children.filter((child) => child.exitCode === null && child.signalCode === null).reverse();
  const stopNext = (): void => {
    const child = running.shift();
    if (child === undefined) return;
    child.once('exit', stopNext);
    child.kill('SIGTERM');
  };
  stopNext();
}
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
process.on('SIGHUP', shutdown);
