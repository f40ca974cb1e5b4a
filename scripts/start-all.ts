/**
 * `npm start`: the pet service and the gateway with embedded defaults (in-memory store, in-memory
 * limits, demo keys), each in its own process as in production. Stops both when either exits
 * or on Ctrl-C.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

const root = join(__dirname, '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');
const petServicePort = process.env.PET_SERVICE_PORT ?? '50051';

function start(name: string, entry: string, env: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn(tsx, [join(root, entry)], { env: { ...process.env, ...env }, stdio: 'inherit' });
  child.on('exit', (code, signal) => {
    console.error(`${name} exited (${signal ?? code}); stopping`);
    shutdown(code ?? 1);
  });
  return child;
}

const children = [
  start('pet-service', 'pet-service/src/main.ts', { PET_SERVICE_PORT: petServicePort, ADMIN_PORT: process.env.PET_SERVICE_ADMIN_PORT ?? '9091' }),
  start('gateway', 'gateway/src/main.ts', { PET_SERVICE_ADDR: process.env.PET_SERVICE_ADDR ?? `localhost:${petServicePort}` }),
];

let stopping = false;
function shutdown(code: number): void {
  if (stopping) return;
  stopping = true;
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
  process.exitCode = code;
}
process.on('SIGINT', () => shutdown(0));
process.on('SIGTERM', () => shutdown(0));
