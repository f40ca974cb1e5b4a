import { status as Status } from '@grpc/grpc-js';
import { StartupError } from '@petstore/runtime';
import { expect } from 'chai';
import { type Document, MongoClient } from 'mongodb';
import { startMongoOrSkip, skipUnlessControllable, type MongoServer } from '../../../../system-test/support/mongo-server';
import { MongoPetRepository } from '../../../src/store/mongo-pet-repository';
import { IDEMPOTENCY_WINDOW_MS } from '../../../src/pets/idempotency';
import { PetServiceError } from '../../../src/pets/pet-service-error';
import { describePetRepositoryContract } from '../../unit/store/pet-repository-contract';
import { freePort } from '../../../../system-test/support/redis-server';
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
    it('skips the rest of a block whose replica stopped, and never hands out its ids', async () => {
      const database = server.freshDatabase();
      const crashed = await MongoPetRepository.connect({ uri: server.uri, database, timeoutMs: 5000, idBlockSize: 10 });
      const first = (await crashed.create({ name: 'a', categoryId: 1n, status: 'available' })).pet.id;
      await crashed.close(); // ids 2 to 10 stay reserved by a replica that is gone
      const next = await MongoPetRepository.connect({ uri: server.uri, database, timeoutMs: 5000, idBlockSize: 10 });
      try {
        const after = (await next.create({ name: 'b', categoryId: 1n, status: 'available' })).pet.id;
        expect([first, after]).to.deep.equal([1n, 11n]);
        expect((await next.list({ limit: 10 })).map((pet) => pet.id)).to.deep.equal([1n, 11n]);
      } finally {
        await next.close();
      }
    });

    it('writes the id collections once per block, never per create (counted from the store\'s side)', async () => {
      const writes = new Set(['insert', 'update', 'findAndModify', 'delete']);
      const written: string[] = [];
      const repository = await MongoPetRepository.connect({
        uri: server.uri,
        database: server.freshDatabase(),
        timeoutMs: 10_000,
        idBlockSize: 10,
        onCommand: (event) => {
          if (writes.has(event.commandName)) written.push(String(event.command[event.commandName]));
        },
      });
      try {
        for (let round = 0; round < 5; round += 1) {
          await Promise.all(Array.from({ length: 19 }, (_, index) => repository.create({ name: `p${round}.${index}`, categoryId: 1n, status: 'sold' })));
        }
        expect(repository.idBlocksReserved).to.equal(10); // 95 creates, 10 ids a block
        expect(written.filter((collection) => collection === 'id_blocks')).to.have.length(10);
        expect(written.filter((collection) => collection === 'counters')).to.deep.equal([]);
        expect(written.filter((collection) => collection === 'pets')).to.have.length(95);
      } finally {
        await repository.close();
      }
    });

    it('gives four replicas racing for blocks disjoint blocks and distinct ids (FerretDB\'s updates are not atomic; its unique index is)', async () => {
      const database = server.freshDatabase();
      const replicas = await Promise.all(
        Array.from({ length: 4 }, () => MongoPetRepository.connect({ uri: server.uri, database, timeoutMs: 20_000, idBlockSize: 3 })),
      );
      try {
        const created = await Promise.all(
          Array.from({ length: 120 }, (_, index) => replicas[index % 4]!.create({ name: `p${index}`, categoryId: 1n, status: 'available' })),
        );
        const ids = created.map((result) => result.pet.id);
        expect(new Set(ids).size).to.equal(120);
        const blocks = await raw
          .db(database)
          .collection<{ _id: bigint; first: bigint; last: bigint }>('id_blocks')
          .find({}, { sort: { _id: 1 } })
          .toArray();
        expect(blocks.length).to.equal(replicas.reduce((sum, replica) => sum + replica.idBlocksReserved, 0));
        for (const [index, block] of blocks.entries()) {
          expect(block._id).to.equal(BigInt(index));
          expect(block.first).to.equal(index === 0 ? 1n : blocks[index - 1]!.last + 1n);
          expect(block.last).to.equal(block.first + 2n);
        }
        for (const id of ids) expect(blocks.some((block) => block.first <= id && id <= block.last), String(id)).to.equal(true);
      } finally {
        await Promise.all(replicas.map((replica) => replica.close()));
      }
    });

    it('starts above the ids of the counter the store used before blocks, so an upgrade reuses none', async () => {
      const database = server.freshDatabase();
      await raw.db(database).collection<{ _id: string; seq: bigint }>('counters').insertOne({ _id: 'pets', seq: 41n });
      const repository = await connect(database);
      try {
        expect((await repository.create({ name: 'a', categoryId: 1n, status: 'available' })).pet.id).to.equal(42n);
      } finally {
        await repository.close();
      }
    });

    it('moves to a block above an id found in use (written without a reservation), not to the next id', async () => {
      const database = server.freshDatabase();
      const repository = await MongoPetRepository.connect({ uri: server.uri, database, timeoutMs: 5000, idBlockSize: 100 });
      try {
        expect((await repository.create({ name: 'a', categoryId: 1n, status: 'available' })).pet.id).to.equal(1n);
        // A restore, or a replica of the earlier version, wrote ids inside this replica's block.
        await raw.db(database).collection<{ _id: bigint }>('pets').insertMany([2n, 3n, 250n].map((id) => ({ _id: id, name: 'old', categoryId: 1n, status: 'sold' })));
        expect((await repository.create({ name: 'b', categoryId: 1n, status: 'available' })).pet.id).to.equal(251n);
        expect((await repository.create({ name: 'c', categoryId: 1n, status: 'available' }, { key: 'k', fingerprint: 'f' })).pet.id).to.equal(252n);
      } finally {
        await repository.close();
      }
    });

    it('starts above ids already in the collection (restored, or written by other tools), so it cannot duplicate one', async () => {
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

  describe('changes', () => {
    it('reads a pet stored without a version (before versions existed) as version 0, and its first change gives it 1', async () => {
      const database = server.freshDatabase();
      const repository = await connect(database);
      try {
        // Written the old way: the four fields, no version, as the store wrote pets before.
        await raw.db(database).collection('pets').insertOne({ _id: 77n as never, name: 'Old', categoryId: 5n, status: 'available' });
        expect(await repository.get(77n)).to.deep.equal({ id: 77n, name: 'Old', categoryId: 5n, status: 'available', version: 0 });
        const error = await repository.update(77n, { status: 'sold' }, [1]).catch((thrown: unknown) => thrown as PetServiceError);
        expect((error as PetServiceError).refusal).to.deep.equal({ currentEtag: '"0"' });
        expect((await repository.update(77n, { status: 'pending' }, [0])).pet).to.deep.equal({ id: 77n, name: 'Old', categoryId: 5n, status: 'pending', version: 1 });
        expect(await raw.db(database).collection('pets').findOne({ _id: 77n as never })).to.include({ version: 1, status: 'pending' });
        await repository.delete(77n, [1]);
        expect(await repository.get(77n)).to.equal(undefined);
      } finally {
        await repository.close();
      }
    });

    it('changes with one conditional write: the pet, its version and the statuses the change may start from in one filter', async () => {
      const database = server.freshDatabase();
      const commands: Document[] = [];
      const repository = await MongoPetRepository.connect({
        uri: server.uri,
        database,
        timeoutMs: 5000,
        onCommand: (event) => {
          if (event.commandName !== 'hello' && event.commandName !== 'isMaster') commands.push({ name: event.commandName, command: event.command });
        },
      });
      try {
        const pet = (await repository.create({ name: 'Rex', categoryId: 1n, status: 'available' })).pet;
        commands.length = 0;
        await repository.update(pet.id, { status: 'sold' }, [0]);
        expect(commands.map((command) => command.name)).to.deep.equal(['findAndModify']);
        const filter = JSON.parse(JSON.stringify(commands[0]!.command.query, (_, value: unknown) => (typeof value === 'bigint' ? String(value) : value)));
        expect(filter).to.deep.equal({
          $and: [{ _id: String(pet.id) }, { version: { $exists: false } }, { status: { $in: ['available', 'pending'] } }],
        });
      } finally {
        await repository.close();
      }
    });
  });

  describe('opening', () => {
    // What the pet service waits out at start-up (it tries again), as against what it exits on.
    it('fails with UNAVAILABLE, naming the hosts, when no server answers: a closed port, a name that does not resolve, SRV records that do not', async () => {
      const closed = await freePort();
      for (const [uri, reason] of [
        [`mongodb://127.0.0.1:${closed}`, `MongoDB at 127.0.0.1:${closed}: connect ECONNREFUSED 127.0.0.1:${closed}`],
        ['mongodb://mongodb-0.petstore.invalid:27017', 'MongoDB at mongodb-0.petstore.invalid:27017: getaddrinfo ENOTFOUND mongodb-0.petstore.invalid'],
        ['mongodb+srv://mongodb.petstore.invalid', 'MongoDB at mongodb.petstore.invalid: querySrv ENOTFOUND _mongodb._tcp.mongodb.petstore.invalid'],
      ] as const) {
        const error = await MongoPetRepository.connect({ uri, database: 'unused', timeoutMs: 300 }).then(() => undefined, (thrown: unknown) => thrown);
        expect(error, uri).to.be.instanceOf(PetServiceError).and.to.include({ code: Status.UNAVAILABLE, message: `pet store unavailable: ${reason}` });
      }
    });

    it('fails with a StartupError naming MONGODB_URI, never the password, when the server refuses the credentials', async () => {
      const uri = new URL(server.uri);
      uri.username = 'nobody';
      uri.password = 'hunter2';
      const error = await MongoPetRepository.connect({ uri: uri.toString(), database: 'unused', timeoutMs: 2000 }).then(() => undefined, (thrown: unknown) => thrown);
      expect(error).to.be.instanceOf(StartupError);
      expect((error as Error).message)
        .to.match(new RegExp(`^invalid configuration: MONGODB_URI: MongoDB at ${uri.host} refuses the credentials \\(\\S[^\\n]*$`))
        .and.not.include('hunter2');
    });
  });

  describe('a read slower than its caller can wait (a page over 30,000 pets: FerretDB scans them all)', () => {
    let database: string;
    const needSlowPages = (context: Mocha.Context): void => {
      if (server.kind === 'ferretdb') return;
      console.warn('      pending: on MongoDB the page is an index range scan, never slower than the timeout');
      context.skip();
    };
    before(async function () {
      this.timeout(60_000);
      database = server.freshDatabase();
      const pets = raw.db(database).collection<{ _id: bigint }>('pets');
      for (let from = 1; from <= 30_000; from += 5000) {
        await pets.insertMany(Array.from({ length: 5000 }, (_, index) => ({ _id: BigInt(from + index), name: `p${from + index}`, categoryId: 1n, status: 'available' })));
      }
      // Builds the indexes, so the stores below only find them made.
      await (await connect(database, undefined, 30_000)).close();
    });

    it('fails past the store timeout as a timeout that tells clients not to retry (retry pushback -1)', async function () {
      needSlowPages(this);
      const repository = await connect(database, undefined, 200);
      try {
        const error = await repository.list({ status: 'available', limit: 21 }).then(() => expect.fail('the page was served'), (thrown: unknown) => thrown);
        expect(error).to.be.instanceOf(PetServiceError);
        expect([Status.UNAVAILABLE, Status.DEADLINE_EXCEEDED]).to.include((error as PetServiceError).code);
        expect((error as PetServiceError).retryPushbackMs).to.equal(-1);
      } finally {
        await repository.close();
      }
    });

    it('stops a read whose signal aborts once it is on the wire: the driver drops it and rejects with the reason', async function () {
      needSlowPages(this);
      let sent: () => void = () => undefined;
      const onTheWire = new Promise<void>((resolve) => (sent = resolve));
      const repository = await MongoPetRepository.connect({
        uri: server.uri,
        database,
        timeoutMs: 60_000,
        onCommand: (event) => {
          if (event.commandName === 'find') sent();
        },
      });
      try {
        const controller = new AbortController();
        const reason = new PetServiceError(Status.CANCELLED, 'caller gone');
        const read = repository.list({ status: 'available', limit: 21 }, controller.signal).then(
          () => 'served',
          (thrown: unknown) => thrown,
        );
        await onTheWire;
        controller.abort(reason);
        expect(await read).to.equal(reason);
        // The connection it used was closed; the next read gets another and is served.
        expect(await repository.get(7n)).to.include({ id: 7n });
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
