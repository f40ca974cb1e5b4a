import { status as Status } from '@grpc/grpc-js';
import { expect } from 'chai';
import type { Document } from 'mongodb';
import { everyWriteLoses, startFakeReplicaMember, type FakeReplicaMember } from '../../../../system-test/support/fake-replica-member';
import { PetServiceError } from '../../../src/pets/pet-service-error';
import { MongoPetRepository } from '../../../src/store/mongo-pet-repository';

/**
 * A change whose conditional write keeps losing, on a scripted member that answers every read with
 * the pet and every write of it with "matched nothing". (The memory store checks and writes in one
 * synchronous step, so it cannot lose a write: it has no such path.)
 */
describe('MongoPetRepository when every conditional write of a pet loses (a scripted member)', function () {
  this.timeout(30_000);
  const PET = { _id: 7n, name: 'Rex', categoryId: 1n, status: 'available', version: 3 };
  let member: FakeReplicaMember | undefined;
  let repository: MongoPetRepository | undefined;

  before(async () => {
    member = await startFakeReplicaMember(everyWriteLoses(PET));
    repository = await MongoPetRepository.connect({ uri: member.uri, database: 'petstore', timeoutMs: 5000 });
  });

  after(async () => {
    await repository?.close();
    await member?.close();
  });

  const sent = (name: string): Document[] => member!.commands.filter((command) => command[name] === 'pets');
  const refusal = (promise: Promise<unknown>): Promise<PetServiceError> =>
    promise.then(
      () => expect.fail('the change was made'),
      (error: unknown) => error as PetServiceError,
    );

  for (const [label, versions] of [
    ['without an etag', undefined],
    ['with an etag that matches every time', [3]],
  ] as const) {
    it(`gives up a change ${label} after 8 writes, ABORTED with no current etag (no condition of the caller's failed)`, async () => {
      const before = sent('findAndModify').length;
      const error = await refusal(repository!.update(7n, { name: 'Max' }, versions));
      expect(error).to.be.instanceOf(PetServiceError);
      expect(error.code).to.equal(Status.ABORTED);
      expect(error.refusal, 'no google.rpc.ErrorInfo: the gateway answers 503, not 412').to.equal(undefined);
      expect(sent('findAndModify').length - before).to.equal(8);
    });
  }

  it('gives up a delete without an etag after 8 deletes, ABORTED with no current etag', async () => {
    const before = sent('delete').length;
    const error = await refusal(repository!.delete(7n, undefined));
    expect([error.code, error.refusal]).to.deep.equal([Status.ABORTED, undefined]);
    expect(sent('delete').length - before).to.equal(8);
  });

  it('refuses a stale etag at once, ABORTED with the current one: that condition did fail', async () => {
    const before = sent('findAndModify').length;
    const error = await refusal(repository!.update(7n, { name: 'Max' }, [2]));
    expect([error.code, error.refusal]).to.deep.equal([Status.ABORTED, { currentEtag: '"3"' }]);
    expect(sent('findAndModify').length - before).to.equal(1);
  });
});
