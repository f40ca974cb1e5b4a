import { once } from 'node:events';
import { createServer, type Server } from 'node:net';
import { expect } from 'chai';
import {
  expectClosed,
  expectFree,
  holdHttpRequest,
  isRunning,
  printCommandsOfFailedTests,
  type ProcessEntry,
  processTree,
  run,
  signalWithCallInFlight,
  type Started,
} from './support/commands';
import { findExecutable, pendingOrRequired } from './support/executables';
import { freePort } from './support/redis-server';
import { waitFor } from './support/wait-for';

async function ports(...names: string[]): Promise<Record<string, number>> {
  return Object.fromEntries(await Promise.all(names.map(async (name) => [name, await freePort()] as const)));
}

/** The environment that puts `npm start`'s four listeners on the ports `p` holds. */
function startEnv(p: Record<string, number>): NodeJS.ProcessEnv {
  return { PORT: String(p.gateway), ADMIN_PORT: String(p.gatewayAdmin), PET_SERVICE_PORT: String(p.pet), PET_SERVICE_ADMIN_PORT: String(p.petAdmin) };
}

/**
 * SIGTERM to the process a documented start command created (npm, not the servers behind it) must
 * reach every server: each drains (in-flight work finishes), closes its ports and exits, and the
 * command exits 0. Before, npm and sh exited and left the servers running, holding their ports.
 */
describe('SIGTERM to a documented start command reaches the servers behind it', function () {
  this.timeout(60_000);
  printCommandsOfFailedTests();
  let started: Started | undefined;

  afterEach(() => {
    // Only reached when a test failed: nothing may outlive it.
    if (started?.child.exitCode === null) started.child.kill('SIGKILL');
  });

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
    const head = await request.finish();
    expect(head).to.match(/^HTTP\/1\.1 201 Created\r\n/);
    // In flight when the signal came, and answered after it: it closes its connection (issue 45).
    expect(head).to.match(/\r\nConnection: close(\r\n|$)/);
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
    process.kill(-started.child.pid!, 'SIGINT');
    expect(await started.closed).to.deep.equal([0, null]);
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

/**
 * Issue 40: Ctrl-C in the terminal of `npm run start:gateway` or `start:pet-service` sends SIGINT to
 * the whole process group, so node gets it twice, from the group and forwarded by npm; the second
 * one used to end it at once, with no drain and no "stopped" line. Sent here as a terminal sends it.
 */
describe('Ctrl-C on a documented start command drains the service behind it', function () {
  this.timeout(60_000);
  printCommandsOfFailedTests();
  let started: Started | undefined;
  const ctrlC = { name: 'SIGINT', send: (it: Started) => process.kill(-it.child.pid!, 'SIGINT') } as const;

  afterEach(() => {
    // Only reached when a test failed: nothing of the group may outlive it.
    if (started === undefined) return;
    try {
      process.kill(-started.child.pid!, 'SIGKILL');
    } catch {
      // The group is gone already.
    }
  });

  /** Every line of `service` that says it is shutting down, stopped, or was told again. */
  const shutdownLines = (service: string) =>
    started!.lines
      .filter((line) => line.includes(`"service":"${service}"`) && /"msg":"(shutting down|already shutting down|stopped)"/.test(line))
      .map((line) => /"msg":"([^"]+)"/.exec(line)![1]);

  it('npm run start:gateway: the in-flight request is answered, "shutting down" and "stopped" are logged, exit 0, ports closed', async () => {
    const p = await ports('gateway', 'gatewayAdmin', 'nobody');
    started = run('npm', ['run', 'start:gateway'], { PORT: String(p.gateway), ADMIN_PORT: String(p.gatewayAdmin), PET_SERVICE_ADDR: `127.0.0.1:${p.nobody}` }, { detached: true });
    await started.waitForLine('gateway listening');
    const request = await holdHttpRequest(p.gateway!);
    ctrlC.send(started);
    await started.waitForLine('"signal":"SIGINT"');
    // The group's copy and npm's can merge into one pending signal: a second press while the
    // gateway drains makes the repeat certain.
    ctrlC.send(started);
    await started.waitForLine('already shutting down');
    expect(await request.finish()).to.match(/^HTTP\/1\.1 503 Service Unavailable\r\n/);
    expect(await started.closed).to.deep.equal([0, null]);
    const lines = shutdownLines('gateway');
    expect(lines[0]).to.equal('shutting down');
    expect(lines.at(-1)).to.equal('stopped');
    expect(lines.filter((line) => line === 'shutting down')).to.have.length(1);
    await expectClosed(p.gateway!, p.gatewayAdmin!);
  });

  it('npm run start:pet-service: the in-flight call finishes OK, "shutting down" and "stopped" are logged, exit 0, ports closed', async () => {
    const p = await ports('pet', 'petAdmin');
    started = run('npm', ['run', 'start:pet-service'], { PET_SERVICE_PORT: String(p.pet), ADMIN_PORT: String(p.petAdmin) }, { detached: true });
    await started.waitForLine('pet service listening');
    expect(await signalWithCallInFlight(started, p.pet!, ctrlC)).to.deep.equal({ call: 'OK', exit: [0, null] });
    await started.closed;
    const lines = shutdownLines('pet-service');
    expect(lines[0]).to.equal('shutting down');
    expect(lines.at(-1)).to.equal('stopped');
    await expectClosed(p.pet!, p.petAdmin!);
  });
});

/**
 * Issue 33: closing the terminal (SIGHUP to npm start's process group) left both services running,
 * each in a process group of its own, holding ports 8080 and 50051, and the next `npm start`
 * failed with grpc-js's EADDRINUSE. However npm start's processes die, no service outlives them.
 */
describe('npm start: no service outlives it, however its processes die', function () {
  this.timeout(60_000);
  printCommandsOfFailedTests();
  let tree: ProcessEntry[] = [];

  afterEach(() => {
    // Only reached with survivors when a test failed: nothing it started may outlive it.
    for (const entry of tree) if (isRunning(entry.pid)) process.kill(entry.pid, 'SIGKILL');
    tree = [];
  });

  /** npm start in a process group of its own, as a terminal's job; resolves once both services listen. */
  async function startAll(p: Record<string, number>): Promise<{ started: Started; launcher: ProcessEntry; services: ProcessEntry[] }> {
    const started = run('npm', ['start'], startEnv(p), { detached: true });
    await Promise.all([started.waitForLine('gateway listening'), started.waitForLine('pet service listening')]);
    tree = processTree(started.child.pid!);
    const launcher = tree.filter((entry) => entry.command.includes('scripts/start-all.ts'));
    const services = tree.filter((entry) => /(gateway|pet-service)\/src\/main\.ts/.test(entry.command));
    expect(launcher, JSON.stringify(tree)).to.have.length(1);
    expect(services, JSON.stringify(tree)).to.have.length(2);
    return { started, launcher: launcher[0]!, services };
  }

  /** Resolves once every process of npm start's tree has exited and all four ports are free. */
  async function expectAllGone(p: Record<string, number>): Promise<void> {
    await waitFor(() => tree.every((entry) => !isRunning(entry.pid)), 15_000, () => `still running: ${JSON.stringify(tree.filter((entry) => isRunning(entry.pid)))}`);
    await expectFree(p.gateway!, p.gatewayAdmin!, p.pet!, p.petAdmin!);
  }

  /** The services' shutdown lines, as `service cause`, in the order they were logged. */
  function shutdowns(started: Started): string[] {
    return started.lines
      .filter((line) => line.includes('"msg":"shutting down"'))
      .map((line) => {
        const { service, signal, parent } = JSON.parse(line) as { service: string; signal?: string; parent?: string };
        return `${service} ${signal ?? `parent ${parent}`}`;
      });
  }

  /** Resolves once both services have logged that they stopped, with their exit codes. */
  async function stoppedCodes(started: Started): Promise<number[]> {
    await waitFor(() => started.lines.filter((line) => line.includes('"msg":"stopped"')).length === 2, 15_000, () => started.lines.join('\n'));
    return started.lines.filter((line) => line.includes('"msg":"stopped"')).map((line) => (JSON.parse(line) as { code: number }).code);
  }

  it('the terminal closes (SIGHUP to the process group): the gateway stops, then the pet service; every port is free', async () => {
    const p = await ports('gateway', 'gatewayAdmin', 'pet', 'petAdmin');
    const { started } = await startAll(p);
    process.kill(-started.child.pid!, 'SIGHUP');
    await expectAllGone(p);
    expect(await stoppedCodes(started)).to.deep.equal([0, 0]);
    expect(shutdowns(started)).to.deep.equal(['gateway SIGTERM', 'pet-service SIGTERM']);
    // The gateway reads SIGHUP as "reload the keys file": it never got the terminal's.
    expect(started.lines.some((line) => line.includes('"reason":"SIGHUP"'))).to.equal(false);
  });

  // What a terminal emulator's window closing does: the pseudo-terminal hangs up, SIGHUP goes to its
  // foreground group, and every later write to it fails with EIO (which hung the services' exit).
  it('the terminal itself goes (a real pseudo-terminal whose emulator is killed): nothing is left, every port is free', async function () {
    const script =
      findExecutable('SCRIPT_BIN', 'script', '/usr/bin/script') ?? pendingOrRequired(this, 'REQUIRE_SCRIPT', 'script (util-linux) not found, to give npm start a terminal');
    const p = await ports('gateway', 'gatewayAdmin', 'pet', 'petAdmin');
    // script runs npm start on a pseudo-terminal of its own and copies what it shows to stdout.
    const started = run(script, ['-qfec', 'npm start', '/dev/null'], startEnv(p), { detached: true });
    await Promise.all([started.waitForLine('gateway listening'), started.waitForLine('pet service listening')]);
    tree = processTree(started.child.pid!);
    expect(tree.filter((entry) => /(gateway|pet-service)\/src\/main\.ts/.test(entry.command)), JSON.stringify(tree)).to.have.length(2);
    process.kill(started.child.pid!, 'SIGKILL');
    await expectAllGone(p);
  });

  it('SIGKILL to the launcher (the node process npm started): each service sees its channel close and stops; every port is free', async () => {
    const p = await ports('gateway', 'gatewayAdmin', 'pet', 'petAdmin');
    const { started, launcher } = await startAll(p);
    process.kill(launcher.pid, 'SIGKILL');
    await expectAllGone(p);
    expect(await stoppedCodes(started)).to.deep.equal([0, 0]);
    expect(shutdowns(started).sort()).to.deep.equal(['gateway parent exited', 'pet-service parent exited']);
  });

  it('SIGKILL to npm: the launcher sees it gone and stops the gateway, then the pet service; every port is free', async () => {
    const p = await ports('gateway', 'gatewayAdmin', 'pet', 'petAdmin');
    const { started } = await startAll(p);
    process.kill(started.child.pid!, 'SIGKILL');
    await expectAllGone(p);
    expect(await stoppedCodes(started)).to.deep.equal([0, 0]);
    expect(shutdowns(started)).to.deep.equal(['gateway SIGTERM', 'pet-service SIGTERM']);
  });

  it('SIGKILL to npm and to the launcher at once: every port is free', async () => {
    const p = await ports('gateway', 'gatewayAdmin', 'pet', 'petAdmin');
    const { started, launcher } = await startAll(p);
    process.kill(started.child.pid!, 'SIGKILL');
    process.kill(launcher.pid, 'SIGKILL');
    await expectAllGone(p);
    expect(await stoppedCodes(started)).to.deep.equal([0, 0]);
  });
});

/**
 * Issue 33: a second `npm start` met grpc-js's `No address added out of total 1 resolved errors:
 * [listen EADDRINUSE ...]`. Whichever listener finds its port taken, the line names the variable
 * the user sets, the command exits 1, and nothing it started stays.
 */
describe('npm start with a port already in use', function () {
  this.timeout(60_000);
  printCommandsOfFailedTests();
  let holder: Server | undefined;
  let tree: ProcessEntry[] = [];

  afterEach(async () => {
    for (const entry of tree) if (isRunning(entry.pid)) process.kill(entry.pid, 'SIGKILL');
    tree = [];
    if (holder !== undefined) await new Promise((resolve) => holder!.close(resolve));
    holder = undefined;
  });

  for (const [variable, name] of [
    ['PET_SERVICE_PORT', 'pet'],
    ['PET_SERVICE_ADMIN_PORT', 'petAdmin'],
    ['PORT', 'gateway'],
    ['ADMIN_PORT', 'gatewayAdmin'],
  ] as const) {
    it(`${variable}: "${variable} <port>: address already in use", exit 1, every other port free`, async () => {
      const p = await ports('gateway', 'gatewayAdmin', 'pet', 'petAdmin');
      holder = createServer();
      await new Promise<void>((resolve) => holder!.listen(p[name], '0.0.0.0', resolve));
      const started = run('npm', ['start'], startEnv(p), { detached: true });
      const exited = once(started.child, 'exit');
      // Whatever started before the failure is found while it runs, to be checked on afterwards.
      const watch = setInterval(() => {
        for (const entry of processTree(started.child.pid!)) if (!tree.some((known) => known.pid === entry.pid)) tree.push(entry);
      }, 20);
      const [code] = await exited.finally(() => clearInterval(watch));
      expect(code).to.equal(1);
      await waitFor(() => tree.every((entry) => !isRunning(entry.pid)), 15_000, () => JSON.stringify(tree));
      await started.closed;
      expect(started.lines.filter((line) => line.includes('already in use'))).to.deep.equal([`${variable} ${p[name]}: address already in use`]);
      // Nothing else says so: grpc-js's own line about the failed bind is left out.
      expect(started.lines.filter((line) => /No address added|EADDRINUSE/.test(line))).to.deep.equal([]);
      await expectFree(...Object.values(p).filter((port) => port !== p[name]));
    });
  }
});
