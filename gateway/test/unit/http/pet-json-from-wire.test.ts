import { BinaryWriter } from '@bufbuild/protobuf/wire';
import { expect } from 'chai';
import fc from 'fast-check';
import { CreatePetResponse, GetPetResponse, ListPetsResponse, Pet } from '@petstore/proto';
import { toApiError } from '../../../src/http/error-handler';
import { listPetsResponseToJson, petResponseToJson } from '../../../src/http/pet-json-from-wire';
import { petsToJson, petToJson } from '../../../src/http/pet-json';
import { FUZZ_SEED } from '../../../../system-test/support/fuzz-seed';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const int64 = fc.oneof(
  fc.bigInt({ min: INT64_MIN, max: INT64_MAX }).map(String),
  fc.integer({ min: 0, max: 2 ** 31 }).map(String),
  fc.constantFrom('0', '1', '127', '128', '16383', '16384', String(2n ** 49n - 1n), String(2n ** 49n), '9007199254740991', '9007199254740993', String(INT64_MAX), String(INT64_MIN), '-1'),
);
/** Text JSON escapes, astral characters, a leading U+FEFF, lone surrogates (encoded as U+FFFD). */
const name = fc.oneof(
  fc.constant(''),
  fc.string({ unit: 'grapheme', maxLength: 100 }),
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.string({ unit: fc.constantFrom('"', '\\', '/', '\n', '\r', '\t', '\b', '\f', '\u0000', '\u001f', '\u007f', '\u2028', '\u2029', '\ufeff', '😀', 'é', 'a'), maxLength: 30 }),
  fc.constantFrom('\ud800', 'a\udc00b', '\ufeffRex', '𝄞🐕'),
);
const status = fc.oneof(fc.integer({ min: 0, max: 4 }), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }));
const etag = fc.oneof(fc.constant(''), fc.constantFrom('"0"', '"42"'), fc.string({ maxLength: 20 }));
const pet: fc.Arbitrary<Pet> = fc.record({ id: int64, name, categoryId: int64, status, etag });
const token = fc.oneof(fc.constant(''), fc.base64String({ maxLength: 80 }), fc.string({ unit: 'binary', maxLength: 40 }));

/** A field of a message on the wire, in any order, repeated, or unknown to the reader. */
type Field = (writer: BinaryWriter) => void;
const unknownField: fc.Arbitrary<Field> = fc.oneof(
  fc.tuple(fc.integer({ min: 6, max: 2 ** 29 - 1 }), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n })).map(([number, value]): Field => (writer) => writer.tag(number, 0).uint64(value)),
  fc.tuple(fc.integer({ min: 6, max: 1000 }), fc.double()).map(([number, value]): Field => (writer) => writer.tag(number, 1).double(value)),
  fc.tuple(fc.integer({ min: 6, max: 1000 }), fc.uint8Array({ maxLength: 20 })).map(([number, value]): Field => (writer) => writer.tag(number, 2).bytes(value)),
  fc.tuple(fc.integer({ min: 6, max: 1000 }), fc.integer()).map(([number, value]): Field => (writer) => writer.tag(number, 5).sfixed32(value)),
  // A known field number with another wire type (no field here is a fixed32) is skipped as unknown.
  fc.tuple(fc.integer({ min: 1, max: 4 }), fc.integer()).map(([number, value]): Field => (writer) => writer.tag(number, 5).sfixed32(value)),
);
const petField: fc.Arbitrary<Field> = fc.oneof(
  int64.map((value): Field => (writer) => writer.uint32(8).int64(value)),
  name.map((value): Field => (writer) => writer.uint32(18).string(value)),
  int64.map((value): Field => (writer) => writer.uint32(24).int64(value)),
  status.map((value): Field => (writer) => writer.uint32(32).int32(value)),
  unknownField,
);
/** A Pet's bytes as any writer might send them: fields in any order, repeated, among unknown ones. */
const scrambledPet = fc.array(petField, { maxLength: 8 }).map((fields) => write(fields));
const listField: fc.Arbitrary<Field> = fc.oneof(
  { weight: 4, arbitrary: fc.oneof(pet.map((value) => Pet.encode(value).finish()), scrambledPet).map((bytes): Field => (writer) => writer.uint32(10).bytes(bytes)) },
  { weight: 1, arbitrary: token.map((value): Field => (writer) => writer.uint32(18).string(value)) },
  { weight: 1, arbitrary: unknownField },
);
const scrambledListResponse = fc.array(listField, { maxLength: 25 }).map((fields) => write(fields));
const petResponseField: fc.Arbitrary<Field> = fc.oneof(
  { weight: 3, arbitrary: fc.oneof(pet.map((value) => Pet.encode(value).finish()), scrambledPet).map((bytes): Field => (writer) => writer.uint32(10).bytes(bytes)) },
  { weight: 1, arbitrary: unknownField },
);
const scrambledPetResponse = fc.array(petResponseField, { maxLength: 4 }).map((fields) => write(fields));

function write(fields: readonly Field[]): Uint8Array {
  const writer = new BinaryWriter();
  for (const field of fields) field(writer);
  return writer.finish();
}

/** Today's path: the generated decoder, then pet-json. */
function plainList(bytes: Uint8Array): { body: string; nextPageToken: string } {
  const { pets, nextPageToken } = ListPetsResponse.decode(bytes);
  return { body: petsToJson(pets), nextPageToken };
}

function plainPet(bytes: Uint8Array): { body: string; id: string; etag: string } | undefined {
  const { pet: decoded } = GetPetResponse.decode(bytes);
  return decoded === undefined ? undefined : { body: petToJson(decoded), id: decoded.id, etag: decoded.etag };
}

type Outcome<T> = { answer: T } | { thrown: string };

function outcome<T>(run: () => T): Outcome<T> {
  try {
    return { answer: run() };
  } catch (error) {
    return { thrown: String(error) };
  }
}

/**
 * Runs `write` with the generated decoders of the responses unusable, so that an answer shows the
 * writer read the bytes itself rather than taking the plain path.
 */
function withoutPlainPath<T>(write: () => T): T {
  const { decode: decodeList } = ListPetsResponse;
  const { decode: decodePet } = GetPetResponse;
  ListPetsResponse.decode = GetPetResponse.decode = () => {
    throw new Error('took the plain path');
  };
  try {
    return write();
  } finally {
    ListPetsResponse.decode = decodeList;
    GetPetResponse.decode = decodePet;
  }
}

/** Whether the writer's answer, or what it throws, is today's path's; `itself`: without the plain path. */
function expectListLikePlain(bytes: Uint8Array, itself = false): void {
  const plain = outcome(() => plainList(bytes));
  const fast = outcome(() => (itself ? withoutPlainPath(() => listPetsResponseToJson(bytes)) : listPetsResponseToJson(bytes)));
  expect(fast).to.deep.equal(plain);
}

function expectPetLikePlain(bytes: Uint8Array, itself = false): void {
  const plain = outcome(() => plainPet(bytes));
  const fast = outcome(() => (itself ? withoutPlainPath(() => petResponseToJson(bytes)) : petResponseToJson(bytes)));
  if ('answer' in plain && plain.answer === undefined) expect(fast).to.deep.equal({ thrown: 'Error: the pet service answered without a pet' });
  else expect(fast).to.deep.equal(plain);
}

const runs = (numRuns: number) => ({ numRuns, seed: FUZZ_SEED });

describe('pet JSON from the wire', () => {
  describe('listPetsResponseToJson', () => {
    it('writes the body of today’s path, byte for byte, for any response the generated encoder writes', () => {
      fc.assert(
        fc.property(fc.array(pet, { maxLength: 30 }), token, (pets, nextPageToken) => {
          expectListLikePlain(ListPetsResponse.encode({ pets, nextPageToken }).finish(), true);
        }),
        runs(3000),
      );
    });

    it('reads fields in any order, the last of a repeated one, and skips unknown fields, as the generated decoder does', () => {
      fc.assert(fc.property(scrambledListResponse, (bytes) => expectListLikePlain(bytes, true)), runs(3000));
    });

    it('answers as today’s path, a body or the same error, for bytes cut short, altered or random', () => {
      fc.assert(fc.property(damaged(scrambledListResponse), (bytes) => expectListLikePlain(bytes)), runs(5000));
    });

    it('writes int64 extremes digit for digit, every status, and names as JSON.stringify escapes them', () => {
      const pets = [
        { id: '9223372036854775807', name: '"\\/\n\r\t\b\f\u0000\u001f\u007f\u2028', categoryId: '-9223372036854775808', status: 1, etag: '' },
        { id: '9007199254740993', name: '\ufeff𝄞 Rex 🐕', categoryId: '562949953421312', status: 2, etag: '' },
        { id: '0', name: '', categoryId: '0', status: 3, etag: '' },
        { id: '1', name: 'x', categoryId: '2', status: 0, etag: '' },
        { id: '2', name: 'y', categoryId: '3', status: 7, etag: '' },
        { id: '3', name: 'z', categoryId: '4', status: -1, etag: '' },
      ];
      const { body, nextPageToken } = listPetsResponseToJson(ListPetsResponse.encode({ pets, nextPageToken: 'djEuMjA' }).finish());
      expect(body).to.equal(
        '[{"id":9223372036854775807,"name":"\\"\\\\/\\n\\r\\t\\b\\f\\u0000\\u001f\u007f\u2028","categoryId":-9223372036854775808,"status":"available"},' +
          '{"id":9007199254740993,"name":"\ufeff𝄞 Rex 🐕","categoryId":562949953421312,"status":"pending"},' +
          '{"id":0,"name":"","categoryId":0,"status":"sold"},' +
          '{"id":1,"name":"x","categoryId":2,"status":"available"},' +
          '{"id":2,"name":"y","categoryId":3,"status":"available"},' +
          '{"id":3,"name":"z","categoryId":4,"status":"available"}]',
      );
      expect(nextPageToken).to.equal('djEuMjA');
    });

    it('writes a page larger than its kept output buffer, and the next page after it', () => {
      const pets = Array.from({ length: 3000 }, (_, index) => ({ id: String(index + 1), name: `"\u0001${'é'.repeat(index % 40)}`, categoryId: '9223372036854775807', status: index % 4, etag: '' }));
      const large = ListPetsResponse.encode({ pets, nextPageToken: 'next' }).finish();
      expectListLikePlain(large, true);
      expect(listPetsResponseToJson(large).body.length).to.be.greaterThan(256 * 1024);
      expectListLikePlain(ListPetsResponse.encode({ pets: pets.slice(0, 2), nextPageToken: '' }).finish(), true);
    });

    it('answers an empty page with [] and no next page', () => {
      expect(listPetsResponseToJson(new Uint8Array(0))).to.deep.equal({ body: '[]', nextPageToken: '' });
    });

    it('writes a name that is not valid UTF-8 as today’s path does, each bad sequence as U+FFFD', () => {
      const bytes = write([(writer) => writer.uint32(10).bytes(write([(pet) => pet.uint32(18).bytes(Uint8Array.of(0x52, 0xed, 0xa0, 0x80, 0xc0, 0x78))]))]);
      expect(listPetsResponseToJson(bytes).body).to.equal('[{"id":0,"name":"R\ufffd\ufffd\ufffd\ufffdx","categoryId":0,"status":"available"}]');
      expectListLikePlain(bytes);
    });

    it('throws what the generated decoder throws for bytes that are no message', () => {
      expect(() => listPetsResponseToJson(Uint8Array.of(0x0a, 0x05, 0x08))).to.throw(RangeError, 'premature EOF');
      expect(() => listPetsResponseToJson(Uint8Array.of(0x0f))).to.throw(Error, 'cant skip wire type 7');
    });

    it('gives a body that JSON.parse reads back to the pets, ids exact', () => {
      const pets = [{ id: '9223372036854775807', name: 'Rex "the dog"', categoryId: '42', status: 2, etag: '' }];
      const body = listPetsResponseToJson(ListPetsResponse.encode({ pets, nextPageToken: '' }).finish()).body;
      expect(JSON.parse(body.replaceAll(/":(-?\d+)/g, '":"$1"'))).to.deep.equal([{ id: '9223372036854775807', name: 'Rex "the dog"', categoryId: '42', status: 'pending' }]);
    });
  });

  describe('petResponseToJson', () => {
    it('writes the body of today’s path and the id, for any GetPetResponse or CreatePetResponse the generated encoder writes', () => {
      fc.assert(
        fc.property(pet, (value) => {
          const bytes = GetPetResponse.encode({ pet: value }).finish();
          expect(CreatePetResponse.encode({ pet: value }).finish()).to.deep.equal(bytes);
          expectPetLikePlain(bytes, true);
        }),
        runs(3000),
      );
    });

    it('takes the last pet of several, skips unknown fields, and reads fields in any order', () => {
      fc.assert(fc.property(scrambledPetResponse, (bytes) => expectPetLikePlain(bytes, true)), runs(3000));
    });

    it('answers as today’s path for bytes cut short, altered or random', () => {
      fc.assert(fc.property(damaged(scrambledPetResponse), (bytes) => expectPetLikePlain(bytes)), runs(5000));
    });

    it('reads the same pet from a CreatePetResponse as the generated decoder', () => {
      fc.assert(
        fc.property(scrambledPetResponse, (bytes) => {
          const created = outcome(() => CreatePetResponse.decode(bytes).pet);
          const got = outcome(() => GetPetResponse.decode(bytes).pet);
          expect(created).to.deep.equal(got);
        }),
        runs(1000),
      );
    });

    it('returns the id as the decimal the Location header needs, and the etag for ETag', () => {
      const bytes = CreatePetResponse.encode({ pet: { id: '9223372036854775807', name: 'Rex', categoryId: '1', status: 1, etag: '"0"' } }).finish();
      expect(petResponseToJson(bytes)).to.deep.equal({
        body: '{"id":9223372036854775807,"name":"Rex","categoryId":1,"status":"available"}',
        id: '9223372036854775807',
        etag: '"0"',
      });
    });

    it('throws for a response without a pet, which the routes answer 500 internal as today', () => {
      let thrown: unknown;
      try {
        petResponseToJson(write([(writer) => writer.tag(9, 0).int32(1)]));
      } catch (error) {
        thrown = error;
      }
      expect(thrown).to.be.instanceOf(Error);
      expect(toApiError(thrown).toJson()).to.equal('{"code":"internal","message":"internal error","status":500}');
    });

    it('throws what the generated decoder throws for bytes that are no message', () => {
      expect(() => petResponseToJson(Uint8Array.of(0x0a, 0x02, 0x08))).to.throw(RangeError, 'premature EOF');
    });
  });
});

/** Messages cut short, with a byte changed, added or removed, and random bytes. */
function damaged(messages: fc.Arbitrary<Uint8Array>): fc.Arbitrary<Uint8Array> {
  const mutated = fc
    .tuple(messages, fc.nat(), fc.nat({ max: 255 }), fc.constantFrom('cut', 'set', 'insert', 'delete'))
    .map(([bytes, at, byte, how]) => mutate(bytes, at, byte, how));
  return fc.oneof(mutated, fc.uint8Array({ maxLength: 64 }));
}

function mutate(bytes: Uint8Array, at: number, byte: number, how: string): Uint8Array {
  const copy = [...bytes];
  const index = copy.length === 0 ? 0 : at % copy.length;
  if (how === 'cut') copy.length = index;
  else if (how === 'set' && copy.length > 0) copy[index] = byte;
  else if (how === 'insert') copy.splice(index, 0, byte);
  else copy.splice(index, 1);
  return Uint8Array.from(copy);
}
