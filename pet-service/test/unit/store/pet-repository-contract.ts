import { status as Status } from '@grpc/grpc-js';
import { expect } from 'chai';
import { IDEMPOTENCY_WINDOW_MS } from '../../../src/pets/idempotency';
import type { NewPetRecord, PetRecord } from '../../../src/pets/pet-record';
import type { PetRepository } from '../../../src/store/pet-repository';
import { PetServiceError } from '../../../src/pets/pet-service-error';

/** Opens an empty store whose idempotency keys expire on `now`. */
export type OpenRepository = (now: () => number) => Promise<PetRepository>;

/**
 * The behaviour every PetRepository must have. Each store's test file calls this with a factory
 * that gives an empty store; the suite closes what it opens.
 */
export function describePetRepositoryContract(name: string, open: OpenRepository): void {
  describe(`${name} (PetRepository contract)`, () => {
    let repository: PetRepository;
    let now: number;

    beforeEach(async function () {
      now = Date.UTC(2026, 0, 1);
      repository = await open(() => now);
    });

    afterEach(async () => {
      await repository?.close();
    });

    const create = async (pet: NewPetRecord): Promise<PetRecord> => (await repository.create(pet)).pet;
    const ids = (pets: Array<{ id: bigint }>) => pets.map((pet) => pet.id);

    it('assigns positive, unique, increasing ids', async () => {
      const first = await create({ name: 'a', categoryId: 1n, status: 'available' });
      const second = await create({ name: 'b', categoryId: 1n, status: 'sold' });
      expect(first.id > 0n).to.equal(true);
      expect(second.id > first.id).to.equal(true);
    });

    it('gives distinct ids to concurrent creates, and every record is readable', async () => {
      const created = await Promise.all(
        Array.from({ length: 50 }, (_, index) => create({ name: `p${index}`, categoryId: 1n, status: 'available' })),
      );
      expect(new Set(ids(created)).size).to.equal(50);
      for (const pet of created) expect(await repository.get(pet.id)).to.deep.equal(pet);
    });

    it('stores every field exactly, int64 extremes included', async () => {
      const created = await create({ name: 'Ünïcødé 🐱', categoryId: 2n ** 63n - 1n, status: 'pending' });
      expect(await repository.get(created.id)).to.deep.equal(created);
      expect(created).to.include({ name: 'Ünïcødé 🐱', categoryId: 2n ** 63n - 1n, status: 'pending' });
    });

    it('returns undefined for an unknown id', async () => {
      expect(await repository.get(2n ** 63n - 1n)).to.equal(undefined);
    });

    it('lists in ascending id order, after a cursor, up to a limit, filtered by status', async () => {
      const statuses = ['available', 'pending', 'sold'] as const;
      const created = [];
      for (let index = 0; index < 12; index += 1) {
        created.push(await create({ name: `p${index}`, categoryId: BigInt(index + 1), status: statuses[index % 3]! }));
      }
      expect(ids(await repository.list({ limit: 5 }))).to.deep.equal(ids(created.slice(0, 5)));
      expect(ids(await repository.list({ limit: 5, afterId: created[4]!.id }))).to.deep.equal(ids(created.slice(5, 10)));
      expect(ids(await repository.list({ limit: 100, afterId: created[11]!.id }))).to.deep.equal([]);
      const sold = created.filter((pet) => pet.status === 'sold');
      expect(ids(await repository.list({ limit: 2, status: 'sold' }))).to.deep.equal(ids(sold.slice(0, 2)));
      expect(ids(await repository.list({ limit: 10, status: 'sold', afterId: sold[1]!.id }))).to.deep.equal(ids(sold.slice(2)));
      expect(await repository.list({ limit: 3, status: 'pending' })).to.deep.equal(
        created.filter((pet) => pet.status === 'pending').slice(0, 3),
      );
    });

    it('lists after an id that does not exist', async () => {
      const created = [];
      for (let index = 0; index < 3; index += 1) created.push(await create({ name: 'p', categoryId: 1n, status: 'sold' }));
      expect(ids(await repository.list({ limit: 10, afterId: created[0]!.id + 0n }))).to.deep.equal(ids(created.slice(1)));
      expect(await repository.list({ limit: 10, afterId: 0n })).to.have.length(3);
    });

    describe('idempotent creates', () => {
      const rex: NewPetRecord = { name: 'Rex', categoryId: 7n, status: 'available' };
      const claim = { key: 'caller-a retry-1', fingerprint: 'f1' };

      it('returns the first pet for a retry with the same key and fingerprint, and creates nothing', async () => {
        const first = await repository.create(rex, claim);
        const retry = await repository.create(rex, claim);
        expect(first.replayed).to.equal(false);
        expect(retry).to.deep.equal({ pet: first.pet, replayed: true });
        expect(ids(await repository.list({ limit: 10 }))).to.deep.equal([first.pet.id]);
      });

      it('refuses the same key with another fingerprint with ALREADY_EXISTS', async () => {
        await repository.create(rex, claim);
        const error = await repository.create({ ...rex, name: 'Max' }, { ...claim, fingerprint: 'f2' }).then(
          () => undefined,
          (thrown: unknown) => thrown,
        );
        expect(error).to.be.instanceOf(PetServiceError);
        expect((error as PetServiceError).code).to.equal(Status.ALREADY_EXISTS);
        expect(await repository.list({ limit: 10 })).to.have.length(1);
      });

      it('keeps keys apart, and creates without a key are never replays', async () => {
        const a = await repository.create(rex, claim);
        const b = await repository.create(rex, { ...claim, key: 'caller-b retry-1' });
        const plain = await repository.create(rex);
        expect(new Set([a.pet.id, b.pet.id, plain.pet.id]).size).to.equal(3);
        expect([b.replayed, plain.replayed]).to.deep.equal([false, false]);
      });

      it('remembers a key for 24 hours, then treats it as new', async () => {
        const first = await repository.create(rex, claim);
        now += IDEMPOTENCY_WINDOW_MS - 1;
        expect((await repository.create(rex, claim)).pet.id).to.equal(first.pet.id);
        now += 1;
        const later = await repository.create({ ...rex, name: 'Max' }, { ...claim, fingerprint: 'f2' });
        expect(later.replayed).to.equal(false);
        expect(later.pet.id > first.pet.id).to.equal(true);
        expect(later.pet.name).to.equal('Max');
      });

      it('gives every concurrent retry of one key the same pet, and makes one', async () => {
        const results = await Promise.all(Array.from({ length: 20 }, () => repository.create(rex, claim)));
        expect(new Set(results.map((result) => result.pet.id)).size).to.equal(1);
        expect(results.filter((result) => !result.replayed)).to.have.length(1);
        expect(await repository.list({ limit: 100 })).to.have.length(1);
      });
    });
  });
}
