import { status as Status } from '@grpc/grpc-js';
import { expect } from 'chai';
import { IDEMPOTENCY_WINDOW_MS } from '../../../src/pets/idempotency';
import type { NewPetRecord, PetRecord, StoredStatus } from '../../../src/pets/pet-record';
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

      it('answers a replay as the create first did, after the pet changed, and does not make a deleted pet again', async () => {
        const first = await repository.create(rex, claim);
        await repository.update(first.pet.id, { name: 'Renamed' }, undefined);
        expect(await repository.create(rex, claim)).to.deep.equal({ pet: first.pet, replayed: true });
        await repository.delete(first.pet.id, undefined);
        expect(await repository.create(rex, claim)).to.deep.equal({ pet: first.pet, replayed: true });
        expect(await repository.get(first.pet.id)).to.equal(undefined);
        expect(await repository.list({ limit: 10 })).to.deep.equal([]);
      });
    });

    const refusal = (promise: Promise<unknown>): Promise<PetServiceError> =>
      promise.then(
        () => expect.fail('resolved'),
        (error: unknown) => {
          expect(error).to.be.instanceOf(PetServiceError);
          return error as PetServiceError;
        },
      );

    describe('changes', () => {
      const rex: NewPetRecord = { name: 'Rex', categoryId: 7n, status: 'available' };

      it('changes the fields given, keeps the others, and raises the version by one', async () => {
        const pet = await create(rex);
        expect(pet.version).to.equal(0);
        const renamed = await repository.update(pet.id, { name: 'Max' }, undefined);
        expect(renamed).to.deep.equal({ pet: { ...pet, name: 'Max', version: 1 }, changed: true, replayed: false });
        const moved = await repository.update(pet.id, { categoryId: 2n ** 63n - 1n, status: 'pending' }, [1]);
        expect(moved.pet).to.deep.equal({ id: pet.id, name: 'Max', categoryId: 2n ** 63n - 1n, status: 'pending', version: 2 });
        expect(await repository.get(pet.id)).to.deep.equal(moved.pet);
      });

      it('follows the transition table: every pair of statuses', async () => {
        const statuses: StoredStatus[] = ['available', 'pending', 'sold'];
        const allowed = new Set(['available>pending', 'pending>available', 'pending>sold', 'available>sold']);
        for (const from of statuses) {
          for (const to of statuses) {
            const pet = await create({ ...rex, status: from });
            const attempt = repository.update(pet.id, { status: to }, undefined);
            if (allowed.has(`${from}>${to}`)) {
              expect((await attempt).pet.status, `${from} -> ${to}`).to.equal(to);
            } else {
              const error = await refusal(attempt);
              expect(error.code, `${from} -> ${to}`).to.equal(Status.FAILED_PRECONDITION);
              expect(error.message).to.contain(`from ${from} to ${to}`);
              expect(await repository.get(pet.id)).to.deep.equal(pet);
            }
          }
        }
      });

      it('writes nothing when every field given already has its value', async () => {
        const pet = await create(rex);
        expect(await repository.update(pet.id, { name: 'Rex', categoryId: 7n }, [0])).to.deep.equal({ pet, changed: false, replayed: false });
        expect(await repository.get(pet.id)).to.deep.equal(pet);
      });

      it('refuses an etag that is not the pet\'s with ABORTED and the current etag, before the transition', async () => {
        const pet = await create({ ...rex, status: 'sold' });
        await repository.update(pet.id, { name: 'Max' }, undefined);
        const error = await refusal(repository.update(pet.id, { status: 'available' }, [0, 7]));
        expect(error.code).to.equal(Status.ABORTED);
        expect(error.refusal).to.deep.equal({ currentEtag: '"1"' });
        expect((await repository.update(pet.id, { name: 'Kit' }, [0, 1])).pet.version).to.equal(2);
      });

      it('answers NOT_FOUND for a pet that does not exist, whatever the etag', async () => {
        expect((await refusal(repository.update(2n ** 63n - 1n, { name: 'Max' }, undefined))).code).to.equal(Status.NOT_FOUND);
        expect((await refusal(repository.update(2n ** 63n - 1n, { name: 'Max' }, [0]))).code).to.equal(Status.NOT_FOUND);
      });

      it('lets exactly one of 50 concurrent changes from one version through; the others are ABORTED', async () => {
        const pet = await create(rex);
        const results = await Promise.allSettled(Array.from({ length: 50 }, () => repository.update(pet.id, { status: 'pending' }, [0])));
        const done = results.filter((result) => result.status === 'fulfilled');
        expect(done).to.have.length(1);
        for (const result of results) {
          if (result.status === 'rejected') expect((result.reason as PetServiceError).code).to.equal(Status.ABORTED);
        }
        expect(await repository.get(pet.id)).to.deep.equal({ ...pet, status: 'pending', version: 1 });
      });

      it('sells a pet once when 50 try at once without an etag; the others are FAILED_PRECONDITION', async () => {
        const pet = await create({ ...rex, status: 'pending' });
        const results = await Promise.allSettled(Array.from({ length: 50 }, () => repository.update(pet.id, { status: 'sold' }, undefined)));
        expect(results.filter((result) => result.status === 'fulfilled')).to.have.length(1);
        for (const result of results) {
          if (result.status === 'rejected') expect((result.reason as PetServiceError).code).to.equal(Status.FAILED_PRECONDITION);
        }
        expect(await repository.get(pet.id)).to.deep.equal({ ...pet, status: 'sold', version: 1 });
      });

      it('moves a pet between filtered lists: a walk of one status sees it at most once', async () => {
        const pets = [];
        for (let index = 0; index < 6; index += 1) pets.push(await create(rex));
        const first = await repository.list({ limit: 3, status: 'available' });
        expect(ids(first)).to.deep.equal(ids(pets.slice(0, 3)));
        // Between the pages: one already listed leaves and comes back, one not yet listed leaves.
        await repository.update(pets[1]!.id, { status: 'pending' }, undefined);
        await repository.update(pets[1]!.id, { status: 'available' }, undefined);
        await repository.update(pets[4]!.id, { status: 'pending' }, undefined);
        const second = await repository.list({ limit: 3, status: 'available', afterId: first[2]!.id });
        expect(ids(second)).to.deep.equal([pets[3]!.id, pets[5]!.id]);
        expect(ids(await repository.list({ limit: 10, status: 'pending' }))).to.deep.equal([pets[4]!.id]);
        expect(ids(await repository.list({ limit: 10 }))).to.deep.equal(ids(pets));
      });

      describe('with an idempotency key', () => {
        const claim = { key: 'pet:1 caller-a change-1', fingerprint: 'c1' };

        it('answers a retry with the first change\'s pet, after other changes, and changes nothing', async () => {
          const pet = await create(rex);
          const first = await repository.update(pet.id, { status: 'sold' }, undefined, claim);
          expect(first).to.deep.equal({ pet: { ...pet, status: 'sold', version: 1 }, changed: true, replayed: false });
          await repository.update(pet.id, { name: 'Max' }, undefined);
          expect(await repository.update(pet.id, { status: 'sold' }, undefined, claim)).to.deep.equal({ ...first, replayed: true });
          expect((await repository.get(pet.id))!.version).to.equal(2);
        });

        it('refuses the key with another change with ALREADY_EXISTS', async () => {
          const pet = await create(rex);
          await repository.update(pet.id, { status: 'pending' }, undefined, claim);
          expect((await refusal(repository.update(pet.id, { status: 'sold' }, undefined, { ...claim, fingerprint: 'c2' }))).code).to.equal(
            Status.ALREADY_EXISTS,
          );
          expect((await repository.get(pet.id))!.status).to.equal('pending');
        });

        it('makes one change of 20 concurrent retries, and answers each with its pet', async () => {
          const pet = await create(rex);
          const results = await Promise.all(Array.from({ length: 20 }, () => repository.update(pet.id, { name: 'Max' }, undefined, claim)));
          expect(results.filter((result) => !result.replayed)).to.have.length(1);
          for (const result of results) expect(result.pet).to.deep.equal({ ...pet, name: 'Max', version: 1 });
          expect((await repository.get(pet.id))!.version).to.equal(1);
        });

        it('remembers a change\'s key for 24 hours, then treats it as new', async () => {
          const pet = await create(rex);
          await repository.update(pet.id, { name: 'Max' }, undefined, claim);
          now += IDEMPOTENCY_WINDOW_MS - 1;
          expect((await repository.update(pet.id, { name: 'Max' }, undefined, claim)).replayed).to.equal(true);
          now += 1;
          const later = await repository.update(pet.id, { name: 'Bo' }, undefined, { ...claim, fingerprint: 'c2' });
          expect([later.replayed, later.pet.name, later.pet.version]).to.deep.equal([false, 'Bo', 2]);
        });

        it('remembers nothing of a refused change: its retry is judged again', async () => {
          const pet = await create({ ...rex, status: 'pending' });
          expect((await refusal(repository.update(pet.id, { status: 'pending' }, undefined, claim))).code).to.equal(Status.FAILED_PRECONDITION);
          await repository.update(pet.id, { status: 'available' }, undefined);
          expect((await repository.update(pet.id, { status: 'pending' }, undefined, claim)).replayed).to.equal(false);
        });
      });
    });

    describe('deletes', () => {
      it('deletes a pet: then it is found nowhere, and a second delete is NOT_FOUND', async () => {
        const kept = await create({ name: 'Kept', categoryId: 1n, status: 'sold' });
        const pet = await create({ name: 'Rex', categoryId: 1n, status: 'sold' });
        await repository.delete(pet.id, undefined);
        expect(await repository.get(pet.id)).to.equal(undefined);
        expect(ids(await repository.list({ limit: 10 }))).to.deep.equal([kept.id]);
        expect(ids(await repository.list({ limit: 10, status: 'sold' }))).to.deep.equal([kept.id]);
        expect((await refusal(repository.delete(pet.id, undefined))).code).to.equal(Status.NOT_FOUND);
        expect((await refusal(repository.update(pet.id, { name: 'Max' }, undefined))).code).to.equal(Status.NOT_FOUND);
      });

      it('deletes only at the etag given: ABORTED with the current etag otherwise', async () => {
        const pet = await create({ name: 'Rex', categoryId: 1n, status: 'available' });
        await repository.update(pet.id, { status: 'pending' }, undefined);
        const error = await refusal(repository.delete(pet.id, [0]));
        expect(error.code).to.equal(Status.ABORTED);
        expect(error.refusal).to.deep.equal({ currentEtag: '"1"' });
        await repository.delete(pet.id, [1]);
        expect(await repository.get(pet.id)).to.equal(undefined);
      });
    });
  });
}
