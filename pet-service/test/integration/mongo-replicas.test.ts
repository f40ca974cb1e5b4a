import { credentials, Metadata, status as Status, type ServiceError } from '@grpc/grpc-js';
import { type CreatePetResponse, type GetPetResponse, PetServiceClient, PetStatus } from '@petstore/proto';
import { expect } from 'chai';
import { MongoClient } from 'mongodb';
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
  this.timeout(120_000);
  let server: MongoServer;
  let replicas: ServiceProcess[] = [];
  let clients: PetServiceClient[] = [];

  before(async function () {
    server = await startMongoOrSkip(this);
  });

  after(async () => {
    await server?.close();
  });

  async function startReplicas(count: number, database: string, extra: NodeJS.ProcessEnv = {}): Promise<PetServiceClient[]> {
    // FerretDB's SQLite handler serialises writes, so 400 creates at once queue for seconds there
    // (the last of them waits for all the others: 5 s under test:contention at load 7); the default
    // limit is sized for MongoDB. The write bound and the store timeout are lifted: these tests race
    // creates for ids, they do not shed load or time the store.
    const env = {
      MONGODB_URI: server.uri,
      MONGODB_DB: database,
      MONGODB_TIMEOUT_MS: '30000',
      STORE_MAX_CONCURRENT_WRITES: '400',
      STORE_MAX_QUEUED_WRITES: '400',
      ...extra,
    };
    const results = await Promise.allSettled(Array.from({ length: count }, () => startService('pet-service', env)));
    // Every process that did start is stopped by afterEach, even when another failed to.
    const started = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    replicas.push(...started);
    const failure = results.find((result) => result.status === 'rejected');
    if (failure !== undefined) throw failure.reason;
    const added = started.map((replica) => new PetServiceClient(`127.0.0.1:${replica.port}`, credentials.createInsecure()));
    clients.push(...added);
    return added;
  }

  afterEach(async () => {
    for (const client of clients) client.close();
    await Promise.all(replicas.map((replica) => replica.stop('SIGKILL')));
    replicas = [];
    clients = [];
  });

  it('gives 400 concurrent creates over two replicas distinct ids, each readable from either replica', async () => {
    await startReplicas(2, server.freshDatabase());
    const created = await Promise.all(Array.from({ length: 400 }, (_, index) => createPet(clients[index % 2]!, `p${index}`)));
    const ids = created.map((pet) => pet.id);
    expect(new Set(ids).size).to.equal(400);
    for (const [index, id] of ids.entries()) {
      expect((await getPet(clients[(index + 1) % 2]!, id)).pet).to.include({ id, name: `p${index}` });
    }
  });

  it('hands out no id twice when a replica is killed -9 in a burst and restarted, and keeps every acknowledged create', async () => {
    const database = server.freshDatabase();
    // Blocks of 50: the burst spans several, and the kill strands part of one.
    const settings = { MONGODB_ID_BLOCK_SIZE: '50' };
    const [doomed, survivor] = (await startReplicas(2, database, settings)) as [PetServiceClient, PetServiceClient];
    // Killed once it has acknowledged a block's worth of its 200 (counted on its own answers, not
    // on the burst's: the survivor alone can answer the first hundred on a busy host), while many
    // of the rest are between taking an id and inserting.
    let doomedCreated = 0;
    let blockCreated: () => void = () => undefined;
    const doomedBlockCreated = new Promise<void>((resolve) => (blockCreated = resolve));
    const inFlight = Array.from({ length: 400 }, (_, index) =>
      createPet(index % 2 === 0 ? doomed : survivor, `p${index}`).then(
        (pet) => {
          if (index % 2 === 0 && ++doomedCreated === 50) blockCreated();
          return pet;
        },
        () => undefined,
      ),
    );
    await doomedBlockCreated;
    await replicas[0]!.stop('SIGKILL');
    const during = (await Promise.all(inFlight)).filter((pet): pet is Created => pet !== undefined);
    expect(during.length).to.be.above(200); // the survivor's 200, and what the doomed one finished
    const [restarted] = (await startReplicas(1, database, settings)) as [PetServiceClient];
    const after = await Promise.all(Array.from({ length: 100 }, (_, index) => createPet(index % 2 === 0 ? restarted : survivor, `after${index}`)));
    const ids = [...during, ...after].map((pet) => pet.id);
    expect(new Set(ids).size).to.equal(ids.length);
    for (const id of ids) expect((await getPet(restarted, id)).pet!.id).to.equal(id);
    // Nothing but the acknowledged creates, and at most the killed replica's unanswered ones.
    const raw = new MongoClient(server.uri, { useBigInt64: true });
    try {
      const stored = await raw.db(database).collection('pets').countDocuments();
      expect(stored).to.be.at.least(ids.length).and.at.most(ids.length + (400 - during.length));
    } finally {
      await raw.close();
    }
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
