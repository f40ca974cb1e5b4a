import { credentials, Metadata, status as Status, type ServiceError, Client } from '@grpc/grpc-js';
import { CreatePetRequest, GetPetRequest, ListPetsRequest, PetServiceClient } from '@petstore/proto';
import { expect } from 'chai';
import fc from 'fast-check';
import { MemoryPetRepository } from '../../src/store/memory-pet-repository';
import { createServer, type RunningServer } from '../../src/server';
import { FUZZ_SEED } from '../../../system-test/support/fuzz-seed';

const EXPECTED = new Set([Status.OK, Status.INVALID_ARGUMENT, Status.NOT_FOUND]);
const int64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String);
const int32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
const text = fc.string({ unit: 'binary', maxLength: 200 });

describe('pet service under random messages (fast-check)', function () {
  this.timeout(120_000);
  let server: RunningServer;
  let raw: Client;
  let typed: PetServiceClient;

  before(async () => {
    server = await createServer({ host: '127.0.0.1', port: 0, repository: new MemoryPetRepository(), pageTokenSecret: 's' });
    raw = new Client(`127.0.0.1:${server.port}`, credentials.createInsecure());
    typed = new PetServiceClient(`127.0.0.1:${server.port}`, credentials.createInsecure());
  });

  after(async () => {
    raw.close();
    typed.close();
    await server.shutdown();
  });

  function send(method: string, bytes: Buffer): Promise<Status> {
    return new Promise((resolve) =>
      raw.makeUnaryRequest(
        `/petstore.v1.PetService/${method}`,
        (value: Buffer) => value,
        (value: Buffer) => value,
        bytes,
        new Metadata(),
        { deadline: Date.now() + 5000 },
        (error: ServiceError | null) => resolve(error?.code ?? Status.OK),
      ),
    );
  }

  it('answers well-formed messages with random field values with OK, INVALID_ARGUMENT or NOT_FOUND only', async () => {
    const call = fc.oneof(
      fc.record({ name: text, categoryId: int64, status: int32 }).map((m) => ['CreatePet', Buffer.from(CreatePetRequest.encode(m).finish())] as const),
      fc.record({ pageSize: int32, pageToken: fc.oneof(text, fc.base64String()), status: int32 }).map(
        (m) => ['ListPets', Buffer.from(ListPetsRequest.encode(m).finish())] as const,
      ),
      fc.record({ id: int64 }).map((m) => ['GetPet', Buffer.from(GetPetRequest.encode(m).finish())] as const),
    );
    await fc.assert(
      fc.asyncProperty(call, async ([method, bytes]) => {
        expect(EXPECTED.has(await send(method, bytes)), method).to.equal(true);
      }),
      { numRuns: 2000, seed: FUZZ_SEED },
    );
  });

  it('answers arbitrary bytes without crashing, never with INTERNAL or UNKNOWN', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('CreatePet', 'ListPets', 'GetPet'), fc.uint8Array({ maxLength: 300 }), async (method, bytes) => {
        const code = await send(method, Buffer.from(bytes));
        expect(EXPECTED.has(code), `${method} ${Buffer.from(bytes).toString('hex')} gave ${Status[code]}`).to.equal(true);
      }),
      { numRuns: 2000, seed: FUZZ_SEED },
    );
  });

  it('still serves correctly afterwards', async () => {
    const created = await new Promise<string>((resolve, reject) =>
      typed.createPet({ name: 'after', categoryId: '5', status: 0 }, (error, response) => (error ? reject(error) : resolve(response.pet!.id))),
    );
    const fetched = await new Promise<string>((resolve, reject) =>
      typed.getPet({ id: created }, (error, response) => (error ? reject(error) : resolve(response.pet!.name))),
    );
    expect(fetched).to.equal('after');
  });
});
