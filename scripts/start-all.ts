/**
 * `npm start`: the pet service and the gateway with embedded defaults (in-memory store, in-memory
 * limits, demo keys), each in its own process as in production. Stops both when either exits, or
 * on SIGINT or SIGTERM, which it passes on as SIGTERM: to the gateway first and to the pet service
 * once the gateway has exited, so requests in flight through the gateway still reach the pet
 * service. It exits once both have, non-zero if either did. The pet service gets
 * PET_SERVICE_PORT and, as its ADMIN_PORT, PET_SERVICE_ADMIN_PORT (default 9091): both services
 * read ADMIN_PORT, which is the gateway's here.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

const root = join(__dirname, '..');
const petServicePort = process.env.PET_SERVICE_PORT ?? '50051';

function start(name: string, entry: string, env: NodeJS.ProcessEnv): ChildProcess {
  // Node itself with tsx as a loader, not the tsx CLI: one process per service, so the SIGTERM
  // sent below reaches the server rather than a wrapper. Each in a process group of its own: Ctrl-C
  // in a terminal signals the whole foreground group, which would stop both services at once
  // rather than in the order below.
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, entry)], {
    env: { ...process.env, ...env },
    stdio: 'inherit',
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
  start('pet-service', 'pet-service/src/main.ts', { PET_SERVICE_PORT: petServicePort, ADMIN_PORT: process.env.PET_SERVICE_ADMIN_PORT ?? '9091' }),
  start('gateway', 'gateway/src/main.ts', { PET_SERVICE_ADDR: process.env.PET_SERVICE_ADDR ?? `localhost:${petServicePort}` }),
];

let stopping = false;
function shutdown(): void {
  if (stopping) return;
  stopping = true;
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
