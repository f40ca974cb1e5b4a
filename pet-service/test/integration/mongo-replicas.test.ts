import { credentials, Metadata, status as Status, type ServiceError } from '@grpc/grpc-js';
import { type CreatePetResponse, type GetPetResponse, PetServiceClient, PetStatus } from '@petstore/proto';
import { expect } from 'chai';
import { startMongoOrSkip, type MongoServer } from '../../../system-test/support/mongo-server';
import { startService, type ServiceProcess } from '../../../system-test/support/service-process';

interface Created {
  readonly id: string;
  readonly replayed: boolean;
}

function createPet(client: PetServiceClient, name: string, idempotencyKey?: string): Promise<Created> {
  const metadata = new Metadata();
  if (idempotencyKey !== undefined) {
    metadata.set('idempotency-key', idempotencyKey);
    metadata.set('x-caller-id', 'replica-test');
  }
  return new Promise((resolve, reject) => {
    let replayed = false;
    const call = client.createPet(
      { name, categoryId: '1', status: PetStatus.PET_STATUS_UNSPECIFIED },
      metadata,
      (error: ServiceError | null, response: CreatePetResponse) => (error ? reject(error) : resolve({ id: response.pet!.id, replayed })),
    );
    call.on('metadata', (headers) => (replayed = headers.get('idempotent-replayed')[0] === 'true'));
  });
}

function getPet(client: PetServiceClient, id: string): Promise<GetPetResponse> {
  return new Promise((resolve, reject) => client.getPet({ id }, (error, response) => (error ? reject(error) : resolve(response))));
}

describe('pet-service replicas sharing one MongoDB-wire server (real processes)', function () {
  this.timeout(60_000);
  let server: MongoServer;
  let replicas: ServiceProcess[] = [];
  let clients: PetServiceClient[] = [];

  before(async function () {
    server = await startMongoOrSkip(this);
  });

  after(async () => {
    await server?.close();
  });

  async function startReplicas(count: number, database: string): Promise<void> {
    // FerretDB's SQLite handler serialises writes, and its counter is not atomic, so 200 creates at
    // once queue for seconds there; the default limit is sized for MongoDB. The write bound is
    // lifted: these tests race creates on the id counter, they do not shed load.
    const env = {
      MONGODB_URI: server.uri,
      MONGODB_DB: database,
      MONGODB_TIMEOUT_MS: '10000',
      STORE_MAX_CONCURRENT_WRITES: '200',
      STORE_MAX_QUEUED_WRITES: '200',
    };
    const results = await Promise.allSettled(Array.from({ length: count }, () => startService('pet-service', env)));
    // Every process that did start is stopped by afterEach, even when another failed to.
    const started = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    replicas.push(...started);
    const failure = results.find((result) => result.status === 'rejected');
    if (failure !== undefined) throw failure.reason;
    clients.push(...started.map((replica) => new PetServiceClient(`127.0.0.1:${replica.port}`, credentials.createInsecure())));
  }

  afterEach(async () => {
    for (const client of clients) client.close();
    await Promise.all(replicas.map((replica) => replica.stop('SIGKILL')));
    replicas = [];
    clients = [];
  });

  it('gives 200 concurrent creates over two replicas distinct ids, each readable from either replica', async () => {
    await startReplicas(2, server.freshDatabase());
    const created = await Promise.all(Array.from({ length: 200 }, (_, index) => createPet(clients[index % 2]!, `p${index}`)));
    const ids = created.map((pet) => pet.id);
    expect(new Set(ids).size).to.equal(200);
    for (const [index, id] of ids.entries()) {
      expect((await getPet(clients[(index + 1) % 2]!, id)).pet).to.include({ id, name: `p${index}` });
    }
  });

  it('leaves no duplicate when a replica is killed in the middle of creating', async () => {
    await startReplicas(2, server.freshDatabase());
    const [doomed, survivor] = clients as [PetServiceClient, PetServiceClient];
    let settled = 0;
    let someSettled: () => void = () => undefined;
    const tenSettled = new Promise<void>((resolve) => (someSettled = resolve));
    const inFlight = Array.from({ length: 100 }, (_, index) =>
      createPet(index % 2 === 0 ? doomed : survivor, `p${index}`)
        .catch(() => undefined)
        .finally(() => {
          settled += 1;
          if (settled === 10) someSettled();
        }),
    );
    // Killed while most of its creates are still between taking an id and inserting.
    await tenSettled;
    await replicas[0]!.stop('SIGKILL');
    const during = (await Promise.all(inFlight)).filter((pet): pet is Created => pet !== undefined);
    const after = await Promise.all(Array.from({ length: 50 }, (_, index) => createPet(survivor, `after${index}`)));
    const ids = [...during, ...after].map((pet) => pet.id);
    expect(new Set(ids).size).to.equal(ids.length);
    expect(after).to.have.length(50);
    for (const id of ids) expect((await getPet(survivor, id)).pet!.id).to.equal(id);
  });

  it('answers a create retried on another replica with the first pet, marked as a replay', async () => {
    await startReplicas(2, server.freshDatabase());
    const first = await createPet(clients[0]!, 'Rex', 'order-1');
    const retry = await createPet(clients[1]!, 'Rex', 'order-1');
    expect(first.replayed).to.equal(false);
    expect(retry).to.deep.equal({ id: first.id, replayed: true });
    const conflict = await createPet(clients[1]!, 'Max', 'order-1').then(
      () => undefined,
      (error: ServiceError) => error,
    );
    expect(conflict?.code).to.equal(Status.ALREADY_EXISTS);
  });
});
