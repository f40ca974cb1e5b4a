import { credentials, Metadata, status as Status, type ServiceError, Client } from '@grpc/grpc-js';
import { CreatePetRequest, CreatePetResponse, GetPetRequest, ListPetsRequest, PetServiceClient } from '@petstore/proto';
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

  async function send(method: string, bytes: Buffer): Promise<Status> {
    return (await call(method, bytes)).error?.code ?? Status.OK;
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

  // Issue 17: invalid UTF-8 in a name was stored with U+FFFD in its place.
  it('refuses a name that is not valid UTF-8, and stores every accepted name byte for byte', async () => {
    const fatal = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
    const graphemes = fc.string({ unit: 'grapheme', maxLength: 30 }).map((text) => Buffer.from(text));
    const invalid = fc.constantFrom([0x80], [0xff], [0xfe], [0xc0, 0x80], [0xc3], [0xed, 0xb0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe0, 0x80, 0xaf]);
    const name = fc.oneof(
      graphemes,
      fc.uint8Array({ maxLength: 60 }).map((bytes) => Buffer.from(bytes)),
      fc.tuple(graphemes, invalid, graphemes).map(([before, bad, after]) => Buffer.concat([before, Buffer.from(bad), after])),
    );
    let stored = 0;
    await fc.assert(
      fc.asyncProperty(name, async (bytes) => {
        // CreatePet: name (field 1, length-delimited) as these exact bytes, category_id (field 3) 1.
        const message = Buffer.concat([Buffer.from([0x0a]), varint(bytes.length), bytes, Buffer.from([0x10, 0x01])]);
        const { error, response } = await call('CreatePet', message);
        let text: string | undefined;
        try {
          text = fatal.decode(bytes);
        } catch {
          expect(error?.details, bytes.toString('hex')).to.equal('request: a string field is not valid UTF-8');
          return;
        }
        if (error !== null) {
          expect(error.code, `${bytes.toString('hex')}: ${error.details}`).to.equal(Status.INVALID_ARGUMENT);
          expect(error.details).to.match(/^name: /);
          return;
        }
        const { pet } = CreatePetResponse.decode(response!);
        expect(Buffer.from(pet!.name, 'utf8').equals(bytes), bytes.toString('hex')).to.equal(true);
        expect(pet!.name).to.equal(text);
        stored += 1;
      }),
      { numRuns: 1500, seed: FUZZ_SEED },
    );
    expect(stored, 'names accepted and compared').to.be.above(100);
  });

  function call(method: string, bytes: Buffer): Promise<{ error: ServiceError | null; response: Buffer | undefined }> {
    return new Promise((resolve) =>
      raw.makeUnaryRequest(
        `/petstore.v1.PetService/${method}`,
        (value: Buffer) => value,
        (value: Buffer) => value,
        bytes,
        new Metadata(),
        { deadline: Date.now() + 5000 },
        (error: ServiceError | null, response?: Buffer) => resolve({ error, response }),
      ),
    );
  }

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

/** A protobuf base-128 varint. */
function varint(value: number): Buffer {
  const bytes: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    bytes.push((rest & 0x7f) | 0x80);
    rest >>>= 7;
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}
