import { expect } from 'chai';
import { MemoryPetRepository } from '../../../src/store/memory-pet-repository';
import { describePetRepositoryContract } from './pet-repository-contract';

describePetRepositoryContract('MemoryPetRepository', async (now) => new MemoryPetRepository({ now }));

describe('MemoryPetRepository idempotency keys', () => {
  it('remembers at most maxIdempotencyKeys, forgetting the oldest first', async () => {
    const repository = new MemoryPetRepository({ maxIdempotencyKeys: 3 });
    const pet = { name: 'Rex', categoryId: 1n, status: 'available' } as const;
    const create = (key: string) => repository.create(pet, { key, fingerprint: 'f' });
    const first = await create('c k1');
    for (const key of ['c k2', 'c k3', 'c k4']) await create(key);
    expect(repository.idempotencyKeys).to.equal(3);

    const retried = await create('c k2');
    expect(retried.replayed).to.equal(true);
    const forgotten = await create('c k1');
    expect(forgotten.replayed).to.equal(false);
    expect(forgotten.pet.id).to.not.equal(first.pet.id);
    expect(repository.idempotencyKeys).to.equal(3);
  });
});
