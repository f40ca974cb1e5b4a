import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { expect } from 'chai';
import { freePort } from '../../../system-test/support/redis-server';
import { STARTUP_TIMEOUT_MS } from '../../../system-test/support/service-process';
import { waitFor } from '../../../system-test/support/wait-for';

const ROOT = join(__dirname, '..', '..', '..');

async function answers(url: string): Promise<boolean> {
  try {
    return (await fetch(url)).ok;
  } catch {
    return false;
  }
}

describe('LOG_LEVEL (gateway process)', function () {
  this.timeout(STARTUP_TIMEOUT_MS + 30_000);

  it('at warn, writes the error line of a 503 but no info line for a 200', async () => {
    // At warn the gateway does not announce that it listens (an info line), so it gets fixed
    // ports and is polled until its admin port answers.
    const [port, adminPort, nobody] = [await freePort(), await freePort(), await freePort()];
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'gateway/src/main.ts')], {
      cwd: ROOT,
      env: {
        ...process.env,
        LOG_LEVEL: 'warn',
        PORT: String(port),
        ADMIN_PORT: String(adminPort),
        PET_SERVICE_ADDR: `127.0.0.1:${nobody}`,
        PET_SERVICE_TIMEOUT_MS: '1000',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const lines: Array<Record<string, unknown>> = [];
    createInterface({ input: child.stdout! }).on('line', (text) => lines.push(JSON.parse(text) as Record<string, unknown>));
    const closed = once(child, 'close');
    try {
      await waitFor(async () => child.exitCode !== null || (await answers(`http://127.0.0.1:${adminPort}/healthz`)), STARTUP_TIMEOUT_MS);
      expect(child.exitCode, 'gateway admin port answering, not exited').to.equal(null);

      expect((await fetch(`http://127.0.0.1:${port}/v1/openapi.json`)).status).to.equal(200);
      const failed = await fetch(`http://127.0.0.1:${port}/v1/pets`, { headers: { authorization: 'Bearer demo-free-key-0000' } });
      expect(failed.status).to.equal(503);

      child.kill('SIGTERM');
      const [code] = (await closed) as [number | null];
      expect(code).to.equal(0);
      expect(lines.filter((line) => line.msg === 'request failed')).to.have.length(1);
      expect(lines.filter((line) => (line.level as number) < 40)).to.deep.equal([]);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
