import { status as Status } from '@grpc/grpc-js';
import { NAME_PATTERN, type Pet, PetStatus } from '@petstore/proto';
import { expect } from 'chai';
import { PetServiceError } from '../../../src/pets/pet-service-error';
import { validateCreate, validateDelete, validateGet, validateList, validateUpdate } from '../../../src/pets/pet-validation';

/** The violations `run` is refused with, field by field; fails the test if it is accepted. */
function violationsOf(run: () => unknown): Array<{ field: string; description: string }> {
  try {
    run();
  } catch (error) {
    expect(error).to.be.instanceOf(PetServiceError).that.includes({ code: Status.INVALID_ARGUMENT });
    return (error as PetServiceError).violations.map(({ field, description }) => ({ field, description }));
  }
  return expect.fail('accepted');
}

const pet = (fields: Partial<Pet>): Pet => ({ id: '5', name: '', categoryId: '0', status: 0, etag: '', ...fields });

function expectInvalid(run: () => unknown, field: string): void {
  expect(run).to.throw(PetServiceError).that.includes({ code: Status.INVALID_ARGUMENT });
  try {
    run();
  } catch (error) {
    expect((error as PetServiceError).violations.map((violation) => violation.field)).to.deep.equal([field]);
  }
}

describe('pet-validation', () => {
  it('names every invalid field of a request, one problem each, in the message\'s field order (AIP-193)', () => {
    const violations = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        return { message: (error as PetServiceError).message, violations: (error as PetServiceError).violations };
      }
      return expect.fail('accepted');
    };
    expect(violations(() => validateCreate({ name: '', categoryId: '0', status: 9 as PetStatus }))).to.deep.equal({
      message: 'name: must be 1 to 100 characters; category_id: must be a positive int64; status: unknown value 9',
      violations: [
        { field: 'name', description: 'must be 1 to 100 characters' },
        { field: 'category_id', description: 'must be a positive int64' },
        { field: 'status', description: 'unknown value 9' },
      ],
    });
    expect(violations(() => validateList({ pageSize: 101, pageToken: '', status: 7 as PetStatus })).violations.map((violation) => violation.field)).to.deep.equal([
      'page_size',
      'status',
    ]);
  });

  it('accepts a valid create and defaults the status to available', () => {
    expect(validateCreate({ name: 'Rex', categoryId: '9223372036854775807', status: 0 })).to.deep.equal({
      name: 'Rex',
      categoryId: 9223372036854775807n,
      status: 'available',
    });
    expect(validateCreate({ name: 'a', categoryId: '1', status: PetStatus.PET_STATUS_SOLD }).status).to.equal('sold');
  });

  it('counts name length in code points', () => {
    expect(() => validateCreate({ name: '🐶'.repeat(100), categoryId: '1', status: 0 })).to.not.throw();
    expectInvalid(() => validateCreate({ name: '🐶'.repeat(101), categoryId: '1', status: 0 }), 'name');
    expectInvalid(() => validateCreate({ name: '', categoryId: '1', status: 0 }), 'name');
  });

  it('has a name pattern that is \\P{Cc} written as a plain character class, for every code point', () => {
    const cc = /\p{Cc}/u;
    for (let code = 0; code <= 0x10ffff; code += 1) {
      if (code >= 0xd800 && code <= 0xdfff) continue;
      const character = String.fromCodePoint(code);
      if (NAME_PATTERN.test(character) === cc.test(character)) expect.fail(`U+${code.toString(16)}`);
    }
    // Nothing but the class: the source is the one the OpenAPI document carries to other regex engines.
    expect(NAME_PATTERN.source).to.not.include('\\p').and.not.include('\\P');
  });

  // Issue 17: a NUL or another control character in a name was stored.
  it('rejects a name with a control character, C0, DEL or C1, and accepts other text', () => {
    for (const name of ['a\u0000b', '\u0001', 'tab\there', 'line\n', '\u001b[31mred', 'del\u007f', 'c1\u0085', '\u009f']) {
      expectInvalid(() => validateCreate({ name, categoryId: '1', status: 0 }), 'name');
    }
    for (const name of ['Rex', 'Crème brûlée', '🐶 dog', 'a b', '\u00a0nbsp', '\u2028']) {
      expect(() => validateCreate({ name, categoryId: '1', status: 0 }), JSON.stringify(name)).to.not.throw();
    }
  });

  it('rejects category ids that are not positive int64', () => {
    for (const categoryId of ['0', '-1', '9223372036854775808', '01', 'abc', '']) {
      expectInvalid(() => validateCreate({ name: 'a', categoryId, status: 0 }), 'category_id');
    }
  });

  it('rejects statuses outside the enum', () => {
    expectInvalid(() => validateCreate({ name: 'a', categoryId: '1', status: PetStatus.UNRECOGNIZED }), 'status');
    expectInvalid(() => validateList({ pageSize: 1, pageToken: '', status: 4 as PetStatus }), 'status');
  });

  it('bounds page size to 0..100 with 0 meaning 20', () => {
    expect(validateList({ pageSize: 0, pageToken: '', status: 0 })).to.deep.equal({ pageSize: 20, status: undefined });
    expect(validateList({ pageSize: 100, pageToken: '', status: 2 })).to.deep.equal({ pageSize: 100, status: 'pending' });
    expectInvalid(() => validateList({ pageSize: 101, pageToken: '', status: 0 }), 'page_size');
    expectInvalid(() => validateList({ pageSize: -1, pageToken: '', status: 0 }), 'page_size');
  });

  it('rejects non-positive ids', () => {
    expect(validateGet({ id: '7' })).to.equal(7n);
    expectInvalid(() => validateGet({ id: '0' }), 'id');
    expectInvalid(() => validateGet({ id: '-7' }), 'id');
  });

  // Issue 47: what an internal caller of UpdatePet and DeletePet gets, which the gateway's own
  // validation of a PATCH never lets through to the pet service.
  describe('UpdatePet (AIP-134) and DeletePet (AIP-135)', () => {
    it('names every invalid part of an update at once: the pet id, the mask, the etag condition', () => {
      expect(violationsOf(() => validateUpdate({ pet: pet({ id: '0', name: 'Max' }), updateMask: ['id'], etag: 'nope' }))).to.deep.equal([
        { field: 'pet.id', description: 'must be a positive int64' },
        { field: 'update_mask', description: 'id cannot be changed: it names the pet' },
        { field: 'etag', description: 'must be * or a comma-separated list of quoted entity tags' },
      ]);
      expect(violationsOf(() => validateUpdate({ pet: undefined, updateMask: ['name'], etag: '' }))[0]!.field).to.equal('pet');
    });

    it('refuses by name a mask naming the etag or a field that is not changeable, rather than ignoring it', () => {
      expect(violationsOf(() => validateUpdate({ pet: pet({ name: 'Max' }), updateMask: ['name', 'etag'], etag: '' }))).to.deep.equal([
        { field: 'update_mask', description: "etag is output only: send the etag you saw as the request's etag" },
      ]);
      expect(violationsOf(() => validateUpdate({ pet: pet({ name: 'Max' }), updateMask: ['owner'], etag: '' }))).to.deep.equal([
        { field: 'update_mask', description: '"owner" is not a field of Pet that can be changed (name, category_id, status, or *)' },
      ]);
    });

    it('without a mask changes the fields the pet sets, ignoring its etag; with none set, nothing to change is refused', () => {
      expect(validateUpdate({ pet: pet({ name: 'Max', etag: '"9"' }), updateMask: [], etag: '' })).to.deep.equal({
        id: 5n,
        versions: undefined,
        change: { name: 'Max' },
        fields: ['name'],
      });
      expect(validateUpdate({ pet: pet({ categoryId: '7', status: PetStatus.PET_STATUS_SOLD }), updateMask: [], etag: '' }).fields).to.deep.equal([
        'category_id',
        'status',
      ]);
      expect(violationsOf(() => validateUpdate({ pet: pet({ etag: '"1"' }), updateMask: [], etag: '' }))).to.deep.equal([
        { field: 'update_mask', description: 'names no field, and pet sets none: nothing to change' },
      ]);
    });

    it('checks each field the mask names as a create does, all at once; * names the three; the order is the message\'s', () => {
      expect(violationsOf(() => validateUpdate({ pet: pet({ name: 'a\u0000b' }), updateMask: ['*'], etag: '' })).map(({ field }) => field)).to.deep.equal([
        'pet.name',
        'pet.category_id',
        'pet.status',
      ]);
      // A field the mask names is set to what the pet holds, an empty name included.
      expect(violationsOf(() => validateUpdate({ pet: pet({ status: PetStatus.PET_STATUS_PENDING }), updateMask: ['status', 'name'], etag: '' }))).to.deep.equal([
        { field: 'pet.name', description: 'must be 1 to 100 characters' },
      ]);
      expect(validateUpdate({ pet: pet({ name: 'Max', status: PetStatus.PET_STATUS_PENDING }), updateMask: ['status', 'name'], etag: '' })).to.deep.include({
        change: { name: 'Max', status: 'pending' },
        fields: ['name', 'status'],
      });
    });

    it('reads the etag condition as If-Match: a list of versions, or * and none for any', () => {
      const update = (etag: string) => validateUpdate({ pet: pet({ name: 'Max' }), updateMask: ['name'], etag }).versions;
      expect(update('"1", "3"')).to.deep.equal([1, 3]);
      expect(update('"1", , "3",'), 'empty list elements ignored').to.deep.equal([1, 3]);
      expect(update('*')).to.equal(undefined);
      expect(update('')).to.equal(undefined);
      expect(validateDelete({ id: '3', etag: '"2"' })).to.deep.equal({ id: 3n, versions: [2] });
      expect(validateDelete({ id: '3', etag: '' })).to.deep.equal({ id: 3n, versions: undefined });
      expect(violationsOf(() => validateDelete({ id: '0', etag: '2' })).map(({ field }) => field)).to.deep.equal(['id', 'etag']);
    });
  });
});
