import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect as connectHttp2 } from 'node:http2';
import { connect as connectTcp, type Socket } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { expect } from 'chai';
import { connectOutcome, holdCall, roundTrip } from './support/held-calls';
import { freePort } from './support/redis-server';
import { waitFor } from './support/wait-for';

const ROOT = join(__dirname, '..');
const DEMO_KEY = 'demo-free-key-0000';

interface Started {
  readonly child: ChildProcess;
  readonly lines: string[];
  /** Resolves once a line of output contains `text`. */
  waitForLine(text: string): Promise<void>;
}

/** Runs a documented command as a user would, from the repository root, capturing its output. */
function run(command: string, args: readonly string[], env: NodeJS.ProcessEnv): Started {
  const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const waiters: Array<{ text: string; resolve: () => void }> = [];
  for (const stream of [child.stdout!, child.stderr!]) {
    createInterface({ input: stream }).on('line', (line) => {
      lines.push(line);
      for (const waiter of waiters.filter(({ text }) => line.includes(text))) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    });
  }
  return {
    child,
    lines,
    waitForLine: (text) =>
      lines.some((line) => line.includes(text))
        ? Promise.resolve()
        : new Promise((resolve, reject) => {
            waiters.push({ text, resolve });
            child.once('exit', () => reject(new Error(`exited before printing "${text}":\n${lines.join('\n')}`)));
          }),
  };
}

/**
 * A POST whose headers and half its body have reached the gateway: in flight until `finish` sends
 * the rest, and then answered. Resolves with the status line and the response headers.
 */
async function holdHttpRequest(port: number): Promise<{ finish(): Promise<string> }> {
  const body = JSON.stringify({ name: 'in flight', categoryId: 1 });
  const socket: Socket = connectTcp(port, '127.0.0.1');
  await once(socket, 'connect');
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
  socket.on('error', () => undefined);
  socket.write(
    `POST /v1/pets HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${DEMO_KEY}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`,
  );
  return {
    async finish() {
      socket.write(body.slice(10));
      await Promise.race([once(socket, 'end'), once(socket, 'close')]);
      return received.split('\r\n\r\n')[0]!;
    },
  };
}

/**
 * SIGTERM to the process a documented start command created (npm, not the servers behind it) must
 * reach every server: each drains (in-flight work finishes), closes its ports and exits, and the
 * command exits 0. Before, npm and sh exited and left the servers running, holding their ports.
 */
describe('SIGTERM to a documented start command reaches the servers behind it', function () {
  this.timeout(60_000);
  let started: Started | undefined;

  afterEach(() => {
    // Only reached when a test failed: nothing may outlive it.
    if (started?.child.exitCode === null) started.child.kill('SIGKILL');
  });

  async function ports(...names: string[]): Promise<Record<string, number>> {
    return Object.fromEntries(await Promise.all(names.map(async (name) => [name, await freePort()] as const)));
  }

  async function expectClosed(...closing: number[]): Promise<void> {
    await waitFor(async () => (await Promise.all(closing.map(connectOutcome))).every((outcome) => outcome === 'ECONNREFUSED'), 5000);
  }

  it('npm start: the gateway finishes an in-flight create, then both services close their ports', async () => {
    const p = await ports('gateway', 'gatewayAdmin', 'pet', 'petAdmin');
    started = run('npm', ['start'], {
      PORT: String(p.gateway),
      ADMIN_PORT: String(p.gatewayAdmin),
      PET_SERVICE_PORT: String(p.pet),
      PET_SERVICE_ADMIN_PORT: String(p.petAdmin),
    });
    await Promise.all([started.waitForLine('gateway listening'), started.waitForLine('pet service listening')]);
    const request = await holdHttpRequest(p.gateway!);

    const exited = once(started.child, 'exit');
    started.child.kill('SIGTERM');
    await started.waitForLine('"service":"gateway","signal":"SIGTERM"');
    expect(await request.finish()).to.match(/^HTTP\/1\.1 201 Created\r\n/);
    expect(await exited).to.deep.equal([0, null]);
    await expectClosed(p.gateway!, p.gatewayAdmin!, p.pet!, p.petAdmin!);
  });

  it('npm run start:gateway: the in-flight request is answered, then the gateway closes its ports', async () => {
    const p = await ports('gateway', 'gatewayAdmin', 'nobody');
    started = run('npm', ['run', 'start:gateway'], {
      PORT: String(p.gateway),
      ADMIN_PORT: String(p.gatewayAdmin),
      PET_SERVICE_ADDR: `127.0.0.1:${p.nobody}`,
    });
    await started.waitForLine('gateway listening');
    const request = await holdHttpRequest(p.gateway!);

    const exited = once(started.child, 'exit');
    started.child.kill('SIGTERM');
    await started.waitForLine('"signal":"SIGTERM"');
    // No pet service is running: the answer is the gateway's 503, but an answer, not a reset.
    expect(await request.finish()).to.match(/^HTTP\/1\.1 503 Service Unavailable\r\n/);
    expect(await exited).to.deep.equal([0, null]);
    await expectClosed(p.gateway!, p.gatewayAdmin!);
  });

  it('npm run start:pet-service: the in-flight call finishes OK, then the pet service closes its ports', async () => {
    const p = await ports('pet', 'petAdmin');
    started = run('npm', ['run', 'start:pet-service'], { PET_SERVICE_PORT: String(p.pet), ADMIN_PORT: String(p.petAdmin) });
    await started.waitForLine('pet service listening');
    const session = connectHttp2(`http://127.0.0.1:${p.pet}`);
    session.on('error', () => undefined);
    try {
      await once(session, 'connect');
      const call = holdCall(session);
      await roundTrip(session);

      const exited = once(started.child, 'exit');
      started.child.kill('SIGTERM');
      await started.waitForLine('"signal":"SIGTERM"');
      expect(await call.send()).to.equal('OK');
      expect(await exited).to.deep.equal([0, null]);
      await expectClosed(p.pet!, p.petAdmin!);
    } finally {
      session.destroy();
    }
  });
});
