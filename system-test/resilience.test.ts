import { status as Status } from '@grpc/grpc-js';
import { PetStatus } from '@petstore/proto';
import { expect } from 'chai';
import { fetchWithinContract } from './support/openapi-validator';
import { startScriptedPetService } from './support/scripted-pet-service';
import { loggedInterval, startService } from './support/service-process';
import { startTestStack, TEST_KEYS } from './support/test-stack';
import { waitFor } from './support/wait-for';

const AUTH = { authorization: 'Bearer demo-free-key-0000' };
/** A key whose limit no polling here reaches (5,000 a minute). */
const ROOMY = { authorization: 'Bearer demo-enterprise-key-0000' };
const STACK_AUTH = { authorization: `Bearer ${TEST_KEYS.free}` };
const EMPTY_PAGE = { pets: [], nextPageToken: '' };
/**
 * The gateway's deadline while its pet service is down: long, so that an answer held for it (a
 * call waiting for a connection) stands apart from one given at once, however busy the machine.
 */
const DOWN_DEADLINE_MS = 10_000;

async function status(url: string, init: RequestInit = { headers: AUTH }): Promise<number> {
  const response = await fetchWithinContract(url, init);
  await response.arrayBuffer();
  return response.status;
}

describe('resilience', function () {
  this.timeout(60_000);

  it('answers 503 on every route at once, not at its deadline, while the pet service is down, and recovers when it returns', async () => {
    let petService = await startService('pet-service');
    const petPort = petService.port;
    const gateway = await startService('gateway', { PET_SERVICE_ADDR: `127.0.0.1:${petPort}`, PET_SERVICE_TIMEOUT_MS: String(DOWN_DEADLINE_MS) });
    const base = `http://127.0.0.1:${gateway.port}`;
    try {
      expect(await status(`${base}/v1/pets`)).to.equal(200);
      await petService.stop('SIGKILL');

      const timings: string[] = [];
      for (let round = 0; round < 5; round += 1) {
        for (const [method, path] of [['GET', '/v1/pets'], ['GET', '/v1/pets/1'], ['POST', '/v1/pets']] as const) {
          const started = Date.now();
          const response = await fetchWithinContract(`${base}${path}`, {
            method,
            headers: { ...AUTH, 'content-type': 'application/json' },
            body: method === 'POST' ? '{"name":"a","categoryId":1}' : undefined,
          });
          const elapsed = Date.now() - started;
          timings.push(`${method} ${path} ${response.status} ${elapsed} ms`);
          expect(response.status, timings.join('; ')).to.equal(503);
          expect(await response.json()).to.deep.include({ code: 'service_unavailable', status: 503 });
          // A call held for a connection would end at the deadline (a 504); a quarter of it is far
          // above a busy machine's round trip.
          expect(elapsed, timings.join('; ')).to.be.below(DOWN_DEADLINE_MS / 4);
        }
      }
      console.log(`      pet service down: slowest answer ${Math.max(...timings.map((line) => Number(line.split(' ').at(-2))))} ms of ${timings.length}`);
      expect(await status(`http://127.0.0.1:${gateway.adminPort}/readyz`, {})).to.equal(503);

      petService = await startService('pet-service', { PET_SERVICE_PORT: String(petPort) });
      let recovered = 0;
      await waitFor(async () => (recovered = await status(`${base}/v1/pets`)) === 200, 10_000, () => `last answer ${recovered}`);
      expect(await status(`http://127.0.0.1:${gateway.adminPort}/readyz`, {})).to.equal(200);
    } finally {
      await gateway.stop();
      await petService.stop();
    }
  });

  it('spreads calls over every address of a dns:/// target (round_robin)', async () => {
    // Two replicas on one port, as behind a headless Service: the name resolves to both addresses.
    const first = await startService('pet-service', { PET_SERVICE_HOST: '127.0.0.1' });
    const second = await startService('pet-service', { PET_SERVICE_HOST: '127.0.0.2', PET_SERVICE_PORT: String(first.port) });
    const replicas = [
      { host: '127.0.0.1', service: first },
      { host: '127.0.0.2', service: second },
    ];
    const gateway = await startService(
      'gateway',
      { PET_SERVICE_ADDR: `dns:///pets.test:${first.port}`, FAKE_DNS: 'pets.test=127.0.0.1,127.0.0.2' },
      { nodeFlags: ['--require', 'tsx/cjs', '--require', require.resolve('./support/fake-dns-preload')] },
    );
    const servedByEach = () =>
      Promise.all(
        replicas.map(async ({ host, service }) => {
          const metrics = await (await fetch(`http://${host}:${service.adminPort}/metrics`)).text();
          return Number(/^grpc_server_handled_total\{method="ListPets",code="OK"\} (\d+)$/m.exec(metrics)?.[1] ?? 0);
        }),
      );
    try {
      // The channel is READY with its first connection; the second joins a moment later, which a
      // busy machine can make long. Round robin is judged once both are there.
      let before: number[] = [];
      await waitFor(
        async () => {
          expect(await status(`http://127.0.0.1:${gateway.port}/v1/pets`, { headers: ROOMY })).to.equal(200);
          return (before = await servedByEach()).every((count) => count > 0);
        },
        15_000,
        () => `calls served by each replica: ${before.join(', ')}`,
      );
      for (let index = 0; index < 20; index += 1) expect(await status(`http://127.0.0.1:${gateway.port}/v1/pets`, { headers: ROOMY })).to.equal(200);
      const served = (await servedByEach()).map((count, index) => count - before[index]!);
      expect(served.reduce((sum, count) => sum + count), 'calls served in all').to.equal(20);
      for (const count of served) expect(count, `calls served by each replica: ${served.join(', ')}`).to.be.within(5, 15);
    } finally {
      await gateway.stop();
      await Promise.all(replicas.map(({ service }) => service.stop()));
    }
  });

  it('retries a read at most twice while the pet service stays connected but UNAVAILABLE', async () => {
    const scripted = await startScriptedPetService({ listPets: () => ({ fail: Status.UNAVAILABLE }) });
    const stack = await startTestStack({ petServiceAddress: `127.0.0.1:${scripted.port}` });
    try {
      expect(await status(`${stack.baseUrl}/v1/pets`, { headers: STACK_AUTH })).to.equal(503);
      expect(scripted.calls.listPets).to.equal(3);
    } finally {
      await stack.close();
      await scripted.close();
    }
  });

  it('retries reads on UNAVAILABLE, but never a create', async () => {
    const pet = { id: '1', name: 'Rex', categoryId: '1', status: PetStatus.PET_STATUS_AVAILABLE, etag: '"0"' };
    const scripted = await startScriptedPetService({
      listPets: (attempt) => (attempt === 1 ? { fail: Status.UNAVAILABLE } : EMPTY_PAGE),
      getPet: (attempt) => (attempt === 1 ? { fail: Status.UNAVAILABLE } : { pet }),
      createPet: () => ({ fail: Status.UNAVAILABLE }),
    });
    const stack = await startTestStack({ petServiceAddress: `127.0.0.1:${scripted.port}` });
    try {
      expect(await status(`${stack.baseUrl}/v1/pets`, { headers: STACK_AUTH })).to.equal(200);
      expect(scripted.calls.listPets).to.equal(2);
      const got = await fetchWithinContract(`${stack.baseUrl}/v1/pets/1`, { headers: STACK_AUTH });
      expect(got.status).to.equal(200);
      expect(await got.json()).to.deep.include({ id: 1, name: 'Rex' });
      expect(scripted.calls.getPet).to.equal(2);
      const created = await status(`${stack.baseUrl}/v1/pets`, {
        method: 'POST',
        headers: { ...STACK_AUTH, 'content-type': 'application/json' },
        body: '{"name":"a","categoryId":1}',
      });
      expect(created).to.equal(503);
      expect(scripted.calls.createPet).to.equal(1);
    } finally {
      await stack.close();
      await scripted.close();
    }
  });

  it('answers 504 gateway_timeout when the pet service misses the deadline', async () => {
    const scripted = await startScriptedPetService({ listPets: () => new Promise(() => undefined) });
    const stack = await startTestStack({ petServiceAddress: `127.0.0.1:${scripted.port}`, petClientTimeoutMs: 200 });
    try {
      const response = await fetchWithinContract(`${stack.baseUrl}/v1/pets`, { headers: STACK_AUTH });
      expect(response.status).to.equal(504);
      expect(await response.json()).to.deep.include({ code: 'gateway_timeout' });
    } finally {
      await stack.close();
      await scripted.close();
    }
  });

  it('on SIGTERM fails readiness, refuses new connections, and finishes all 50 in-flight requests', async () => {
    const held: Array<() => void> = [];
    let arrived: () => void = () => undefined;
    const allArrived = new Promise<void>((resolve) => (arrived = resolve));
    const scripted = await startScriptedPetService({
      listPets: () =>
        new Promise((resolve) => {
          held.push(() => resolve(EMPTY_PAGE));
          if (held.length === 50) arrived();
        }),
    });
    const gateway = await startService('gateway', { PET_SERVICE_ADDR: `127.0.0.1:${scripted.port}`, PET_SERVICE_TIMEOUT_MS: '30000' });
    const base = `http://127.0.0.1:${gateway.port}`;
    try {
      const inFlight = Array.from({ length: 50 }, () => status(`${base}/v1/pets`));
      await allArrived;
      const exited = gateway.stop('SIGTERM');
      await gateway.waitForLog((line) => line.msg === 'shutting down');

      expect(await status(`http://127.0.0.1:${gateway.adminPort}/readyz`, {})).to.equal(503);
      const refused = await fetch(`${base}/v1/pets`, { headers: AUTH }).then(
        () => 'answered',
        (error: Error & { cause?: { code?: string } }) => error.cause?.code,
      );
      expect(refused).to.equal('ECONNREFUSED');

      for (const release of held) release();
      expect(await Promise.all(inFlight)).to.deep.equal(Array(50).fill(200));
      expect(await exited).to.equal(0);
    } finally {
      await gateway.stop('SIGKILL');
      await scripted.close();
    }
  });

  it('exits 1 when an in-flight request outlives SHUTDOWN_TIMEOUT_MS', async () => {
    let arrived: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (arrived = resolve));
    const scripted = await startScriptedPetService({
      listPets: () => {
        arrived();
        return new Promise(() => undefined);
      },
    });
    const gateway = await startService('gateway', {
      PET_SERVICE_ADDR: `127.0.0.1:${scripted.port}`,
      PET_SERVICE_TIMEOUT_MS: '30000',
      SHUTDOWN_TIMEOUT_MS: '500',
    });
    try {
      const request = status(`http://127.0.0.1:${gateway.port}/v1/pets`).catch(() => 'reset');
      await held;
      expect(await gateway.stop('SIGTERM')).to.equal(1);
      // Not before the timeout, and when its timer fires, by the gateway's own clock: the signal's
      // delivery and the process's end are the machine's.
      expect(await loggedInterval(gateway, 'shutting down', 'shutdown outlived SHUTDOWN_TIMEOUT_MS; exiting')).to.be.within(500, 1500);
      expect(await request).to.equal('reset');
    } finally {
      await gateway.stop('SIGKILL');
      await scripted.close();
    }
  });
});
