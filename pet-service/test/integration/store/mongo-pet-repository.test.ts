import { status as Status } from '@grpc/grpc-js';
import { expect } from 'chai';
import { type Document, MongoClient } from 'mongodb';
import { startMongoOrSkip, skipUnlessControllable, type MongoServer } from '../../../../system-test/support/mongo-server';
import { MongoPetRepository } from '../../../src/store/mongo-pet-repository';
import { IDEMPOTENCY_WINDOW_MS } from '../../../src/pets/idempotency';
import { PetServiceError } from '../../../src/pets/pet-service-error';
import { describePetRepositoryContract } from '../../unit/store/pet-repository-contract';
import { waitFor } from '../../../../system-test/support/wait-for';

describe('MongoPetRepository against a real MongoDB-wire server', function () {
  let server: MongoServer;
  let raw: MongoClient;

  before(async function () {
    server = await startMongoOrSkip(this);
    raw = new MongoClient(server.uri, { useBigInt64: true });
  });

  after(async () => {
    await raw?.close();
    await server?.close();
  });

  const connect = (database: string, now?: () => number, timeoutMs = 5000) =>
    MongoPetRepository.connect({ uri: server.uri, database, timeoutMs, now });

  // A fresh database per test keeps the counter and the indexes of one test out of the next.
  describePetRepositoryContract('MongoPetRepository', (now) => connect(server.freshDatabase(), now));

  describe('indexes', () => {
    it('creates them idempotently, so every replica can run the same startup', async () => {
      const database = server.freshDatabase();
      const [a, b] = await Promise.all([connect(database), connect(database)]);
      await Promise.all([a.close(), b.close()]);
      const again = await connect(database);
      await again.close();
      const pets = await raw.db(database).collection('pets').indexes();
      expect(pets.find((index) => index.name === 'status_id')?.key).to.deep.equal({ status: 1, _id: 1 });
      const keys = await raw.db(database).collection('idempotency_keys').indexes();
      const expiry = keys.find((index) => index.key.expiresAt === 1);
      expect(expiry, JSON.stringify(keys)).to.not.equal(undefined);
      if (again.expiresKeysOnServer) expect(expiry!.expireAfterSeconds).to.equal(0);
      else expect(expiry!.name).to.equal('expires_at');
    });

    it('serves every query the store makes from an index', async () => {
      const database = server.freshDatabase();
      const repository = await connect(database);
      try {
        for (let index = 0; index < 30; index += 1) await repository.create({ name: 'p', categoryId: 1n, status: 'sold' });
        const db = raw.db(database);
        const indexKeys = (await db.collection('pets').indexes()).map((index) => JSON.stringify(index.key));
        // Equality fields first, then the sort field: the shape under which a page is a range scan.
        const queries: Array<{ filter: Document; sort: Document; index: Document }> = [
          { filter: { _id: { $gt: 10n } }, sort: { _id: 1 }, index: { _id: 1 } },
          { filter: { status: 'sold', _id: { $gt: 10n } }, sort: { _id: 1 }, index: { status: 1, _id: 1 } },
          { filter: { _id: 5n }, sort: {}, index: { _id: 1 } },
        ];
        for (const query of queries) {
          expect(indexKeys).to.include(JSON.stringify(query.index));
          const explained = await db.collection('pets').find(query.filter, { sort: query.sort, limit: 21 }).explain('queryPlanner');
          const plan = (explained.queryPlanner as Document | undefined)?.winningPlan as Document | undefined;
          // Only MongoDB reports a winning plan; FerretDB's SQLite handler reports its own SQL plan.
          if (plan !== undefined) expect(stagesOf(plan), JSON.stringify(plan)).to.not.include.members(['COLLSCAN', 'SORT']);
        }
      } finally {
        await repository.close();
      }
    });
  });

  describe('ids', () => {
    it('never hands out an id twice: an id taken by a replica that crashed before inserting stays a gap', async () => {
      const database = server.freshDatabase();
      const repository = await connect(database);
      try {
        const before = (await repository.create({ name: 'a', categoryId: 1n, status: 'available' })).pet.id;
        // What a replica does before it crashes: take the next id, never insert it.
        const taken = await raw
          .db(database)
          .collection<{ _id: string; seq: bigint }>('counters')
          .findOneAndUpdate({ _id: 'pets' }, { $inc: { seq: 1n } }, { returnDocument: 'after' });
        const after = (await repository.create({ name: 'b', categoryId: 1n, status: 'available' })).pet.id;
        expect(taken!.seq).to.equal(before + 1n);
        expect(after).to.equal(before + 2n);
        expect(await repository.get(taken!.seq)).to.equal(undefined);
        expect((await repository.list({ limit: 10 })).map((pet) => pet.id)).to.deep.equal([before, after]);
      } finally {
        await repository.close();
      }
    });

    it('moves past ids already in use, so a counter that lags (restored, or a non-atomic server) cannot duplicate one', async () => {
      const database = server.freshDatabase();
      const repository = await connect(database);
      try {
        await raw.db(database).collection<{ _id: bigint }>('pets').insertMany([1n, 2n, 3n].map((id) => ({ _id: id, name: 'old', categoryId: 1n, status: 'sold' })));
        const created = (await repository.create({ name: 'new', categoryId: 1n, status: 'available' })).pet;
        expect(created.id).to.equal(4n);
        expect((await repository.list({ limit: 10 })).map((pet) => pet.name)).to.deep.equal(['old', 'old', 'old', 'new']);
      } finally {
        await repository.close();
      }
    });

    it('completes an idempotent create whose first attempt claimed the key and died before inserting', async () => {
      const database = server.freshDatabase();
      const now = Date.UTC(2026, 0, 1);
      const repository = await connect(database, () => now);
      try {
        await raw
          .db(database)
          .collection<{ _id: string; fingerprint: string; petId: bigint; expiresAt: Date }>('idempotency_keys')
          .insertOne({ _id: 'c k', fingerprint: 'f', petId: 41n, expiresAt: new Date(now + IDEMPOTENCY_WINDOW_MS) });
        const retry = await repository.create({ name: 'Rex', categoryId: 1n, status: 'available' }, { key: 'c k', fingerprint: 'f' });
        expect(retry).to.deep.include({ replayed: false });
        expect(retry.pet.id).to.equal(41n);
        const again = await repository.create({ name: 'Rex', categoryId: 1n, status: 'available' }, { key: 'c k', fingerprint: 'f' });
        expect(again).to.deep.equal({ pet: retry.pet, replayed: true });
      } finally {
        await repository.close();
      }
    });

    it('deletes expired keys itself where the server has no TTL index', async function () {
      const database = server.freshDatabase();
      let now = Date.UTC(2026, 0, 1);
      const repository = await connect(database, () => now);
      try {
        const keys = raw.db(database).collection('idempotency_keys');
        await repository.create({ name: 'a', categoryId: 1n, status: 'sold' }, { key: 'c old', fingerprint: 'f' });
        now += IDEMPOTENCY_WINDOW_MS + 60_000;
        await repository.create({ name: 'b', categoryId: 1n, status: 'sold' }, { key: 'c new', fingerprint: 'f' });
        if (repository.expiresKeysOnServer) {
          // MongoDB's TTL monitor deletes on the server's clock, which a test cannot move.
          expect((await keys.indexes()).some((index) => index.expireAfterSeconds === 0)).to.equal(true);
          return;
        }
        await waitFor(async () => (await keys.countDocuments({ _id: 'c old' as never })) === 0, 10_000);
        expect(await keys.countDocuments({})).to.equal(1);
      } finally {
        await repository.close();
      }
    });
  });

  describe('when the server is unreachable', () => {
    it('fails with UNAVAILABLE within the timeout, never hangs, and works again when the server is back', async function () {
      skipUnlessControllable(server, this);
      const repository = await connect(server.freshDatabase(), undefined, 500);
      try {
        const created = (await repository.create({ name: 'kept', categoryId: 1n, status: 'available' })).pet;
        await server.stop();
        for (const operation of [
          () => repository.list({ limit: 5 }),
          () => repository.get(created.id),
          () => repository.create({ name: 'lost?', categoryId: 1n, status: 'available' }),
          () => repository.ping(),
        ]) {
          const started = Date.now();
          const error = await operation().then(() => undefined, (thrown: unknown) => thrown);
          expect(error).to.be.instanceOf(PetServiceError);
          expect((error as PetServiceError).code).to.equal(Status.UNAVAILABLE);
          expect(Date.now() - started).to.be.below(3000);
        }
        await server.restart();
        await waitFor(() => repository.ping().then(() => true, () => false), 10_000);
        expect(await repository.get(created.id)).to.deep.equal(created);
      } finally {
        await repository.close();
      }
    });
  });
});

function stagesOf(plan: Document): string[] {
  const stages = typeof plan.stage === 'string' ? [plan.stage] : [];
  for (const child of [plan.inputStage, ...((plan.inputStages as Document[] | undefined) ?? [])]) {
    if (child !== undefined) stages.push(...stagesOf(child as Document));
  }
  return stages;
}
