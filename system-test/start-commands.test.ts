import { once } from 'node:events';
import { expect } from 'chai';
import { expectClosed, holdHttpRequest, run, signalWithCallInFlight, type Started } from './support/commands';
import { freePort } from './support/redis-server';

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

  // Issue 27, finding 8: Ctrl-C signals the terminal's whole foreground process group.
  it('npm start: Ctrl-C (SIGINT to the process group) stops the gateway, then the pet service', async () => {
    const p = await ports('gateway', 'gatewayAdmin', 'pet', 'petAdmin');
    started = run(
      'npm',
      ['start'],
      { PORT: String(p.gateway), ADMIN_PORT: String(p.gatewayAdmin), PET_SERVICE_PORT: String(p.pet), PET_SERVICE_ADMIN_PORT: String(p.petAdmin) },
      { detached: true },
    );
    await Promise.all([started.waitForLine('gateway listening'), started.waitForLine('pet service listening')]);
    const exited = once(started.child, 'exit');
    process.kill(-started.child.pid!, 'SIGINT');
    expect(await exited).to.deep.equal([0, null]);
    const signals = started.lines.filter((line) => line.includes('"signal":"'));
    expect(signals.map((line) => /"service":"([^"]+)","signal":"([^"]+)"/.exec(line)?.slice(1).join(' '))).to.deep.equal([
      'gateway SIGTERM',
      'pet-service SIGTERM',
    ]);
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
    expect(await signalWithCallInFlight(started, p.pet!)).to.deep.equal({ call: 'OK', exit: [0, null] });
    await expectClosed(p.pet!, p.petAdmin!);
  });
});
