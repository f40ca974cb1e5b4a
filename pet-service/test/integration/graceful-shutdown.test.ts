import { once } from 'node:events';
import { type ClientHttp2Session, connect } from 'node:http2';
import { credentials, makeGenericClientConstructor, type ServiceError } from '@grpc/grpc-js';
import { PET_SERVICE_NAME, PetServiceClient } from '@petstore/proto';
import { expect } from 'chai';
import { service as healthService } from 'grpc-health-check';
import { connectOutcome, type HeldCall, holdCall, roundTrip } from '../../../system-test/support/held-calls';
import { loggedInterval, startService, type ServiceProcess } from '../../../system-test/support/service-process';

describe('pet service process on SIGTERM', function () {
  this.timeout(30_000);
  let petService: ServiceProcess;
  let session: ClientHttp2Session;

  afterEach(async () => {
    session?.destroy();
    await petService?.stop('SIGKILL');
  });

  async function startWith50HeldCalls(shutdownTimeoutMs: number): Promise<HeldCall[]> {
    petService = await startService('pet-service', { PET_SERVICE_HOST: '127.0.0.1', SHUTDOWN_TIMEOUT_MS: String(shutdownTimeoutMs) });
    session = connect(`http://127.0.0.1:${petService.port}`);
    session.on('error', () => undefined);
    await once(session, 'connect');
    const calls = Array.from({ length: 50 }, () => holdCall(session));
    await roundTrip(session);
    return calls;
  }

  it('refuses new connections and finishes all 50 in-flight calls, then exits 0 within SHUTDOWN_TIMEOUT_MS', async () => {
    // Room for a busy machine to send the 50 messages: the timeout is the next test's subject.
    const calls = await startWith50HeldCalls(20_000);
    const exited = petService.stop('SIGTERM');
    await petService.waitForLog((line) => line.msg === 'shutting down');

    expect(await connectOutcome(petService.port)).to.equal('ECONNREFUSED');
    expect(await Promise.all(calls.map((call) => call.send()))).to.deep.equal(Array(50).fill('OK'));
    // 0 only when the drain ended before SHUTDOWN_TIMEOUT_MS (the next test: 1 otherwise).
    expect(await exited).to.equal(0);
    expect(await loggedInterval(petService, 'shutting down', 'stopped')).to.be.below(20_000);
  });

  it('cancels calls that outlive SHUTDOWN_TIMEOUT_MS and exits 1', async () => {
    const calls = await startWith50HeldCalls(500);
    expect(await petService.stop('SIGTERM')).to.equal(1);
    // Not before the timeout, and when its timer fires, by the service's own clock: the signal's
    // delivery and the process's end are the machine's.
    expect(await loggedInterval(petService, 'shutting down', 'shutdown outlived SHUTDOWN_TIMEOUT_MS; exiting')).to.be.within(500, 1500);
    expect(new Set(await Promise.all(calls.map((call) => call.outcome)))).to.not.include('OK');
  });

  it('with SHUTDOWN_DELAY_MS, reports the server NOT_SERVING at once but keeps serving calls, and PetService SERVING, for the delay', async () => {
    petService = await startService('pet-service', { PET_SERVICE_HOST: '127.0.0.1', SHUTDOWN_DELAY_MS: '3000' });
    const target = `127.0.0.1:${petService.port}`;
    const HealthClient = makeGenericClientConstructor(healthService, 'Health');
    const health = new HealthClient(target, credentials.createInsecure()) as never as {
      check(request: { service: string }, callback: (error: ServiceError | null, response?: { status: string }) => void): void;
      close(): void;
    };
    const check = (service: string) =>
      new Promise<string>((resolve, reject) => health.check({ service }, (error, response) => (error ? reject(error) : resolve(response!.status))));
    try {
      const exited = petService.stop('SIGTERM');
      await petService.waitForLog((line) => line.msg === 'shutting down');
      // Kubelet's probe asks for the server (''): out of the endpoints. The gateways ask for the
      // service through a channel balanced over every replica: one leaving must not fail them.
      expect(await check('')).to.equal('NOT_SERVING');
      expect(await check(PET_SERVICE_NAME)).to.equal('SERVING');
      // A new connection and call, still served during the delay.
      const client = new PetServiceClient(target, credentials.createInsecure());
      const listed = await new Promise<number>((resolve, reject) =>
        client.listPets({ pageSize: 1, pageToken: '', status: 0 }, (error, response) => (error ? reject(error) : resolve(response.pets.length))),
      );
      client.close();
      expect(listed).to.equal(0);
      expect(await exited).to.equal(0);
    } finally {
      health.close();
    }
  });
});
