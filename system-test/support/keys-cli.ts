import { spawn } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

export interface KeysCliRun {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs the keys CLI as its own process: through `npm run keys`, as an operator types it, or
 * (`direct`) as node with the tsx loader, which starts faster when many are run at once.
 */
export function runKeysCli(args: readonly string[], env: NodeJS.ProcessEnv, how: 'npm' | 'direct' = 'npm'): Promise<KeysCliRun> {
  const [command, argv] =
    how === 'npm'
      ? ['npm', ['run', '--silent', 'keys', '--', ...args]]
      : [process.execPath, ['--import', 'tsx', join(ROOT, 'gateway', 'src', 'keys', 'keys-main.ts'), ...args]];
  const child = spawn(command, argv, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout: stdout.trim(), stderr }));
  });
}
