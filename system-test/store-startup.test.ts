import { credentials, makeGenericClientConstructor, type ServiceError, status as Status } from '@grpc/grpc-js';
import { createPetServiceClient, PET_SERVICE_NAME, type PromisePetServiceClient } from '@petstore/proto';
import { expect } from 'chai';
import { service as healthService } from 'grpc-health-check';
import { type MongoServer, skipUnlessControllable, startMongoOrSkip } from './support/mongo-server';
import { type ServiceProcess, startService } from './support/service-process';
import { waitFor } from './support/wait-for';

interface HealthStub {
  check(request: { service: string }, callback: (error: ServiceError | null, response?: { status: string }) => void): void;
  close(): void;
}

/**
 * Issue 34: the pet service exited when MongoDB was not reachable yet, so a Deployment applied
 * with its database sat in CrashLoopBackOff for minutes. Now it starts, is alive (`/healthz`, the
 * liveness probe) but not ready (gRPC health NOT_SERVING, the readiness probe), keeps trying, and
 * is ready as soon as the store answers. A real FerretDB, started only after the pet service.
 */
describe('the pet service started before its store (real FerretDB, started afterwards)', function () {
  this.timeout(60_000);
  let mongo: MongoServer;
  let petService: ServiceProcess | undefined;
  let client: PromisePetServiceClient | undefined;
  let health: HealthStub | undefined;

  before(async function () {
    mongo = await startMongoOrSkip(this);
    skipUnlessControllable(mongo, this);
    await mongo.stop();
  });

  after(async () => {
    client?.close();
    health?.close();
    await petService?.stop('SIGKILL');
    await mongo?.close();
  });

  const check = (service: string): Promise<string> =>
    new Promise((resolve, reject) => health!.check({ service }, (error, response) => (error ? reject(error) : resolve(response!.status))));

  it('serves NOT_SERVING and stays up while the store is down, then SERVING and serves calls once it answers', async () => {
    petService = await startService('pet-service', {
      MONGODB_URI: mongo.uri,
      MONGODB_DB: mongo.freshDatabase(),
      MONGODB_TIMEOUT_MS: '300',
      // The periodic ping is not what makes it ready once the store is open.
      STORE_HEALTH_INTERVAL_MS: '600000',
      LOG_LEVEL: 'debug',
    });
    const HealthClient = makeGenericClientConstructor(healthService, 'Health');
    health = new HealthClient(`127.0.0.1:${petService.port}`, credentials.createInsecure()) as never as HealthStub;
    client = createPetServiceClient(`127.0.0.1:${petService.port}`);

    // Kubernetes' probes: readiness is gRPC health (''), liveness the admin /healthz.
    expect(await check('')).to.equal('NOT_SERVING');
    expect(await check(PET_SERVICE_NAME)).to.equal('NOT_SERVING');
    expect((await fetch(`http://127.0.0.1:${petService.adminPort}/healthz`)).status).to.equal(200);
    const refused = await client.listPets({ pageSize: 5, pageToken: '', status: 0 }).then(
      () => undefined,
      (error: ServiceError) => error.code,
    );
    expect(refused).to.equal(Status.UNAVAILABLE);

    // It keeps trying, with backoff, and does not exit: three attempts have failed.
    const third = await petService.waitForLog((line) => line.msg === 'store not reachable yet; NOT_SERVING until it is' && line.attempts === 3);
    expect(third.delayMs).to.be.within(500, 1000);
    expect(petService.child.exitCode).to.equal(null);
    expect(await check('')).to.equal('NOT_SERVING');

    await mongo.restart();
    await waitFor(async () => (await check('')) === 'SERVING', 15_000);
    expect(await check(PET_SERVICE_NAME)).to.equal('SERVING');
    const created = await client.createPet({ name: 'Rex', categoryId: '1', status: 0 });
    const { pets } = await client.listPets({ pageSize: 5, pageToken: '', status: 0 });
    expect(pets.map((pet) => pet.id)).to.deep.equal([created.pet!.id]);
    // Every attempt that failed was logged once at warn (the first) or at debug, never as an error.
    expect(petService.logs.filter((line) => Number(line.level) >= 50)).to.deep.equal([]);
    expect(await petService.stop()).to.equal(0);
  });
});
