import { expect } from 'chai';
import fc from 'fast-check';
import { ListPetsResponse, type Pet } from '@petstore/proto';
import { serializeListPetsResponse, StoredPetsPage, toWire } from '../../../src/grpc/list-pets-serializer';
import type { PetRecord } from '../../../src/pets/pet-record';

const int64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String);
const pet: fc.Arbitrary<Pet> = fc.record({
  id: fc.oneof(int64, fc.constantFrom('0', '1', '127', '128', '9007199254740991', '9007199254740992', '9223372036854775807')),
  name: fc.oneof(fc.constant(''), fc.string({ unit: 'grapheme', maxLength: 100 }), fc.string({ unit: 'binary', maxLength: 20 }), fc.constantFrom('\ud800', 'a\udc00b')),
  categoryId: fc.oneof(int64, fc.constantFrom('0', '1', '9223372036854775807')),
  status: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 })),
  etag: fc.oneof(fc.constant(''), fc.constantFrom('"0"', '"12345"'), fc.string({ maxLength: 20 })),
});

describe('ListPets response serializer', () => {
  it('writes the bytes the generated encoder writes, for any response', () => {
    fc.assert(
      fc.property(fc.array(pet, { maxLength: 30 }), fc.oneof(fc.constant(''), fc.string({ maxLength: 600 })), (pets, nextPageToken) => {
        const response = { pets, nextPageToken };
        expect(serializeListPetsResponse(response).equals(Buffer.from(ListPetsResponse.encode(response).finish()))).to.equal(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('writes a page of stored pets as the generated encoder writes the same pets made Pets (toWire), without their etags', () => {
    const record: fc.Arbitrary<PetRecord> = fc.record({
      id: fc.oneof(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.constantFrom(0n, 1n, 127n, 128n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 63n - 1n)),
      name: fc.oneof(fc.constant(''), fc.string({ unit: 'grapheme', maxLength: 100 }), fc.string({ unit: 'binary', maxLength: 20 })),
      categoryId: fc.oneof(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.constantFrom(0n, 1n, 2n ** 63n - 1n)),
      status: fc.constantFrom('available', 'pending', 'sold'),
      version: fc.nat(),
    });
    fc.assert(
      fc.property(fc.array(record, { maxLength: 30 }), fc.oneof(fc.constant(''), fc.string({ maxLength: 600 })), (records, nextPageToken) => {
        const page = new StoredPetsPage(records, nextPageToken);
        const plain = { pets: records.map((record) => ({ ...toWire(record), etag: '' })), nextPageToken };
        expect(page.pets).to.deep.equal(plain.pets);
        expect(serializeListPetsResponse(page).equals(Buffer.from(ListPetsResponse.encode(plain).finish()))).to.equal(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('decodes back to the response it was given', () => {
    const response = { pets: [{ id: '9223372036854775807', name: 'Rex 🐕', categoryId: '42', status: 2, etag: '"7"' }], nextPageToken: 'djEu' };
    expect(ListPetsResponse.decode(serializeListPetsResponse(response))).to.deep.equal(response);
  });
});
