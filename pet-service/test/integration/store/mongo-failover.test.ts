import { expect } from 'chai';
import pino from 'pino';
import { HealthImplementation } from 'grpc-health-check';
import type { Document } from 'mongodb';
import { startFakeReplicaMember, type FakeReplicaMember, type FakeReply } from '../../../../system-test/support/fake-replica-member';
import { status as Status } from '@grpc/grpc-js';
import { PetServiceError } from '../../../src/pets/pet-service-error';
import { MongoPetRepository } from '../../../src/store/mongo-pet-repository';
import { StoreHealthMonitor } from '../../../src/store/store-health';

const NOT_WRITABLE_PRIMARY: Document = {
  ok: 0,
  code: 10107,
  codeName: 'NotWritablePrimary',
  errmsg: 'not primary',
  errorLabels: ['RetryableWriteError'],
};

/** The inserts of pets the member received. */
const petInserts = (member: FakeReplicaMember): Document[] => member.commands.filter((command) => command.insert === 'pets');

describe('MongoPetRepository through a replica-set election (a scripted member)', function () {
  this.timeout(30_000);
  let member: FakeReplicaMember | undefined;
  let repository: MongoPetRepository | undefined;
  let onInsert: (command: Document) => FakeReply | undefined = () => undefined;

  beforeEach(async () => {
    onInsert = () => undefined;
    member = await startFakeReplicaMember((command) => (command.insert === 'pets' ? onInsert(command) : undefined));
    repository = await MongoPetRepository.connect({ uri: member.uri, database: 'petstore', timeoutMs: 5000 });
  });

  afterEach(async () => {
    await repository?.close();
    await member?.close();
  });

  it('retries a create that meets a stepdown, past the driver\'s own retry, with the same id, and creates it once', async () => {
    // The primary steps down as the insert arrives, and the driver's retry meets the same answer
    // while the election runs; the next primary (the same member, a new term) takes the write.
    let refusals = 2;
    onInsert = () => {
      if (refusals === 0) return undefined;
      refusals -= 1;
      member!.role = 'secondary';
      void member!.nextHelloAs('secondary').then(() => (member!.role = 'primary'));
      return NOT_WRITABLE_PRIMARY;
    };
    const created = await repository!.create({ name: 'Rex', categoryId: 1n, status: 'available' });
    const inserts = petInserts(member!);
    expect(inserts).to.have.length(3);
    expect(inserts.map((insert) => (insert.documents as Document[])[0]!._id)).to.deep.equal([created.pet.id, created.pet.id, created.pet.id]);
    // The driver's retry is the same transaction number; the store's own retry is a new write.
    const transactions = inserts.map((insert) => insert.txnNumber as bigint);
    expect(transactions[1]).to.equal(transactions[0]);
    expect(transactions[2]).to.not.equal(transactions[0]);
    expect(created).to.deep.include({ replayed: false });
  });

  it('loses no create of a burst in flight when the primary steps down', async () => {
    // The first insert to arrive meets the stepdown; the election lasts two heartbeats, so the
    // driver's retries of the inserts refused meanwhile are refused too, and the member is primary
    // again (a new term) while every create of the burst is under way.
    let steppedDown = false;
    onInsert = () => {
      if (steppedDown) return undefined;
      steppedDown = true;
      member!.role = 'secondary';
      void member!
        .nextHelloAs('secondary')
        .then(() => member!.nextHelloAs('secondary'))
        .then(() => (member!.role = 'primary'));
      return NOT_WRITABLE_PRIMARY;
    };
    const created = await Promise.all(
      Array.from({ length: 40 }, (_, index) => repository!.create({ name: `p${index}`, categoryId: 1n, status: 'available' })),
    );
    expect(new Set(created.map((result) => result.pet.id)).size).to.equal(40);
    const refused = member!.commands.filter((command) => command.insert === 'pets').length - 40;
    expect(refused, 'inserts refused during the election').to.be.above(1);
  });

  it('sends a read that lost its connection once more (retryable reads)', async () => {
    let first = true;
    await member!.close();
    member = await startFakeReplicaMember((command) => {
      if (command.find !== 'pets') return undefined;
      if (first) {
        first = false;
        return 'hang up';
      }
      return { cursor: { id: 0n, ns: 'petstore.pets', firstBatch: [{ _id: 7n, name: 'Rex', categoryId: 1n, status: 'sold' }] }, ok: 1 };
    });
    await repository!.close();
    repository = await MongoPetRepository.connect({ uri: member.uri, database: 'petstore', timeoutMs: 5000 });
    expect(await repository.get(7n)).to.deep.equal({ id: 7n, name: 'Rex', categoryId: 1n, status: 'sold', version: 0 });
    expect(member.commands.filter((command) => command.find === 'pets')).to.have.length(2);
  });

  it('answers a create whose insert was applied but whose answer was lost with that pet, not a second one', async () => {
    let applied: Document | undefined;
    onInsert = (command) => {
      const document = (command.documents as Document[])[0]!;
      if (applied === undefined) {
        applied = document;
        return 'hang up';
      }
      return { ok: 1, n: 0, writeErrors: [{ index: 0, code: 11000, errmsg: 'E11000 duplicate key error collection: petstore.pets index: _id_' }] };
    };
    const findPet = (command: Document): FakeReply | undefined =>
      command.find === 'pets' && applied !== undefined ? { cursor: { id: 0n, ns: 'petstore.pets', firstBatch: [applied] }, ok: 1 } : undefined;
    await member!.close();
    member = await startFakeReplicaMember((command) => (command.insert === 'pets' ? onInsert(command) : findPet(command)));
    await repository!.close();
    repository = await MongoPetRepository.connect({ uri: member.uri, database: 'petstore', timeoutMs: 5000 });
    const created = await repository.create({ name: 'Rex', categoryId: 1n, status: 'available' });
    expect(created.pet.id).to.equal(applied!._id);
    expect(new Set(petInserts(member).map((insert) => (insert.documents as Document[])[0]!._id))).to.deep.equal(new Set([created.pet.id]));
  });

  it('stays SERVING while the set has no primary: reads go where the read preference allows, creates wait for the new primary', async () => {
    const spread = await MongoPetRepository.connect({ uri: member!.uri, database: 'petstore', timeoutMs: 1000, readPreference: 'secondaryPreferred' });
    // Long enough for the heartbeats of an election; a primary read waits it out twice (the retry).
    const strict = await MongoPetRepository.connect({ uri: member!.uri, database: 'petstore', timeoutMs: 2500 });
    const health = new HealthImplementation({ '': 'SERVING' });
    const monitor = new StoreHealthMonitor(strict, health, [''], pino({ level: 'silent' }));
    try {
      member!.role = 'secondary';
      // A read from the primary is refused, and the driver's retry finds no primary to go to.
      const refused = await strict.get(1n).then(() => undefined, (error: unknown) => error);
      expect(refused).to.be.instanceOf(PetServiceError);
      expect((refused as PetServiceError).code).to.equal(Status.UNAVAILABLE);
      expect(await monitor.probe()).to.equal(true);
      expect(await spread.list({ limit: 5 })).to.deep.equal([]);
      expect(await strict.get(1n).then(() => 'found', (error: PetServiceError) => Status[error.code])).to.equal('UNAVAILABLE');
      // The election ends at the next heartbeat; the create, under way meanwhile, waits for it:
      // the failed primary reads did not mark the store unreachable, since secondaries answer.
      void member!.nextHelloAs('secondary').then(() => (member!.role = 'primary'));
      const created = await strict.create({ name: 'Rex', categoryId: 1n, status: 'available' });
      expect(petInserts(member!).map((insert) => (insert.documents as Document[])[0]!._id)).to.deep.equal([created.pet.id]);
      await member!.close();
      member = undefined;
      expect(await monitor.probe()).to.equal(false);
    } finally {
      monitor.stop();
      await Promise.all([spread.close(), strict.close()]);
    }
  });
});
