import { expect } from 'chai';
import type { PetRepository } from '../../src/pet-repository';

/**
 * The behaviour every PetRepository must have. Each store's test file calls this with a factory
 * that gives an empty store; the suite closes what it opens.
 */
export function describePetRepositoryContract(name: string, open: () => Promise<PetRepository>): void {
  describe(`${name} (PetRepository contract)`, () => {
    let repository: PetRepository;

    beforeEach(async function () {
      repository = await open();
    });

    afterEach(async () => {
      await repository?.close();
    });

    it('assigns positive, unique, increasing ids', async () => {
      const first = await repository.create({ name: 'a', categoryId: 1n, status: 'available' });
      const second = await repository.create({ name: 'b', categoryId: 1n, status: 'sold' });
      expect(first.id > 0n).to.equal(true);
      expect(second.id > first.id).to.equal(true);
    });

    it('gives distinct ids to concurrent creates', async () => {
      const created = await Promise.all(
        Array.from({ length: 50 }, (_, index) => repository.create({ name: `p${index}`, categoryId: 1n, status: 'available' })),
      );
      expect(new Set(created.map((pet) => pet.id)).size).to.equal(50);
    });

    it('stores every field exactly, int64 extremes included', async () => {
      const created = await repository.create({ name: 'Ünïcødé 🐱', categoryId: 2n ** 63n - 1n, status: 'pending' });
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
        created.push(await repository.create({ name: `p${index}`, categoryId: BigInt(index + 1), status: statuses[index % 3]! }));
      }
      const ids = (pets: Array<{ id: bigint }>) => pets.map((pet) => pet.id);
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
      for (let index = 0; index < 3; index += 1) created.push(await repository.create({ name: 'p', categoryId: 1n, status: 'sold' }));
      expect((await repository.list({ limit: 10, afterId: created[0]!.id + 0n })).map((pet) => pet.id)).to.deep.equal(
        created.slice(1).map((pet) => pet.id),
      );
      expect(await repository.list({ limit: 10, afterId: 0n })).to.have.length(3);
    });
  });
}
