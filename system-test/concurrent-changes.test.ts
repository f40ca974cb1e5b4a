import { status as Status, type ServiceError } from '@grpc/grpc-js';
import { createPetServiceClient, PetStatus, type PromisePetServiceClient } from '@petstore/proto';
import { expect } from 'chai';
import { MemoryPetRepository } from '../pet-service/src/store/memory-pet-repository';
import { MongoPetRepository } from '../pet-service/src/store/mongo-pet-repository';
import type { PetRepository } from '../pet-service/src/store/pet-repository';
import { startMongoOrSkip, type MongoServer } from './support/mongo-server';
import { startTestStack, TEST_KEYS, type TestStack } from './support/test-stack';

/**
 * Issue 47's races: 50 clients change one pet at once, through the gateway and directly over
 * gRPC, on the embedded store and on FerretDB. With one If-Match, exactly one wins (200 / OK) and
 * the 49 others are 412 / ABORTED; without one, a pet is sold exactly once and every other answer
 * is 409 / FAILED_PRECONDITION. The stored pet is then what the one winner made. No bound on the
 * pet service's writes here (the production default would shed a burst of 50 on one replica with
 * 503s), and deadlines long enough for FerretDB to take 50 writes of one pet in turn.
 */
const CLIENTS = 50;
const AUTH = { authorization: `Bearer ${TEST_KEYS.enterprise}` };

describe('concurrent changes of one pet, embedded store', () => {
  describeRaces(async () => new MemoryPetRepository());
});

describe('concurrent changes of one pet, MongoDB store (FerretDB in CI)', function () {
  let server: MongoServer;
  before(async function () {
    server = await startMongoOrSkip(this);
  });
  after(async () => {
    await server?.close();
  });
  describeRaces(() => MongoPetRepository.connect({ uri: server.uri, database: server.freshDatabase(), timeoutMs: 10_000 }));
});

/** Counts of each answer, by HTTP status or gRPC code name. */
type Tally = Record<string, number>;

function tally(answers: readonly string[]): Tally {
  const counts: Tally = {};
  for (const answer of answers) counts[answer] = (counts[answer] ?? 0) + 1;
  return counts;
}

function describeRaces(openStore: () => Promise<PetRepository>): void {
  let stack: TestStack;
  let grpc: PromisePetServiceClient;

  beforeEach(async () => {
    stack = await startTestStack({ repository: await openStore(), petClientTimeoutMs: 20_000 });
    grpc = createPetServiceClient(`127.0.0.1:${stack.petService.port}`, { deadlineMs: 20_000 });
  });

  afterEach(async () => {
    grpc?.close();
    await stack?.close();
  });

  const create = async (status: string): Promise<string> => {
    const response = await fetch(`${stack.baseUrl}/v1/pets`, {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Rex', categoryId: 1, status }),
    });
    expect(response.status).to.equal(201);
    return String(((await response.json()) as { id: number }).id);
  };

  const stored = async (id: string): Promise<{ body: unknown; etag: string | null }> => {
    const response = await fetch(`${stack.baseUrl}/v1/pets/${id}`, { headers: AUTH });
    return { body: await response.json(), etag: response.headers.get('etag') };
  };

  /** 50 PATCHes at once through the gateway; each answer's status. */
  const overHttp = async (id: string, status: string, ifMatch?: string): Promise<Tally> => {
    const headers: Record<string, string> = { ...AUTH, 'content-type': 'application/merge-patch+json', ...(ifMatch === undefined ? {} : { 'if-match': ifMatch }) };
    const answers = await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        const response = await fetch(`${stack.baseUrl}/v1/pets/${id}`, { method: 'PATCH', headers, body: JSON.stringify({ status }) });
        const body = (await response.json()) as { code?: string };
        return response.status === 200 ? '200' : `${response.status} ${body.code}`;
      }),
    );
    return tally(answers);
  };

  /** 50 UpdatePet calls at once straight to the pet service; each answer's code. */
  const overGrpc = async (id: string, status: PetStatus, etag = ''): Promise<Tally> => {
    const answers = await Promise.all(
      Array.from({ length: CLIENTS }, () =>
        grpc.updatePet({ pet: { id, name: '', categoryId: '0', status, etag: '' }, updateMask: ['status'], etag }).then(
          () => 'OK',
          (error: ServiceError) => Status[error.code] ?? String(error.code),
        ),
      ),
    );
    return tally(answers);
  };

  const report = (what: string, counts: Tally): void => {
    console.log(`      ${what}: ${JSON.stringify(counts)}`);
  };

  it('through the gateway, with one If-Match: exactly one 200, 49 × 412, the pet as the winner left it', async () => {
    const id = await create('available');
    const counts = await overHttp(id, 'pending', '"0"');
    report('PATCH available -> pending, If-Match "0"', counts);
    expect(counts).to.deep.equal({ '200': 1, '412 precondition_failed': 49 });
    expect(await stored(id)).to.deep.equal({ body: { id: Number(id), name: 'Rex', categoryId: 1, status: 'pending' }, etag: '"1"' });
  });

  for (const from of ['available', 'pending']) {
    it(`through the gateway, without If-Match, ${from} -> sold: sold exactly once, 49 × 409 invalid_transition`, async () => {
      const id = await create(from);
      const counts = await overHttp(id, 'sold');
      report(`PATCH ${from} -> sold, no If-Match`, counts);
      expect(counts).to.deep.equal({ '200': 1, '409 invalid_transition': 49 });
      expect(await stored(id)).to.deep.equal({ body: { id: Number(id), name: 'Rex', categoryId: 1, status: 'sold' }, etag: '"1"' });
    });
  }

  it('over gRPC, with one etag: exactly one OK, 49 × ABORTED, the pet as the winner left it', async () => {
    const id = await create('available');
    const counts = await overGrpc(id, PetStatus.PET_STATUS_PENDING, '"0"');
    report('UpdatePet available -> pending, etag "0"', counts);
    expect(counts).to.deep.equal({ OK: 1, ABORTED: 49 });
    expect(await stored(id)).to.deep.equal({ body: { id: Number(id), name: 'Rex', categoryId: 1, status: 'pending' }, etag: '"1"' });
  });

  for (const from of ['available', 'pending']) {
    it(`over gRPC, without an etag, ${from} -> sold: sold exactly once, 49 × FAILED_PRECONDITION`, async () => {
      const id = await create(from);
      const counts = await overGrpc(id, PetStatus.PET_STATUS_SOLD);
      report(`UpdatePet ${from} -> sold, no etag`, counts);
      expect(counts).to.deep.equal({ OK: 1, FAILED_PRECONDITION: 49 });
      expect(await stored(id)).to.deep.equal({ body: { id: Number(id), name: 'Rex', categoryId: 1, status: 'sold' }, etag: '"1"' });
    });
  }

  it('deletes once: of 50 DELETEs with one If-Match, one 204 and 49 × 412 or 404, then 404', async () => {
    const id = await create('available');
    const answers = await Promise.all(
      Array.from({ length: CLIENTS }, () => fetch(`${stack.baseUrl}/v1/pets/${id}`, { method: 'DELETE', headers: { ...AUTH, 'if-match': '"0"' } }).then((response) => response.status)),
    );
    const counts = tally(answers.map(String));
    report('DELETE, If-Match "0"', counts);
    expect(counts['204']).to.equal(1);
    expect((counts['404'] ?? 0) + (counts['412'] ?? 0)).to.equal(49);
    expect((await fetch(`${stack.baseUrl}/v1/pets/${id}`, { headers: AUTH })).status).to.equal(404);
  });
}
