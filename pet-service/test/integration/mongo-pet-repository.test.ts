import { randomUUID } from 'node:crypto';
import { MongoPetRepository } from '../../src/mongo-pet-repository';
import { describePetRepositoryContract } from '../contract/pet-repository-contract';

const uri = process.env.MONGODB_URI;

describe('MongoPetRepository against a real MongoDB-wire server', function () {
  before(function () {
    if (uri === undefined || uri === '') {
      if (process.env.REQUIRE_MONGO === '1') throw new Error('REQUIRE_MONGO=1 but MONGODB_URI is not set');
      this.skip(); // pending: MONGODB_URI is not set, so there is no MongoDB server to test against
    }
  });

  // A fresh database per test keeps the counter and the indexes of one test out of the next.
  describePetRepositoryContract('MongoPetRepository', () =>
    MongoPetRepository.connect({ uri: uri!, database: `petstore_test_${randomUUID().slice(0, 8)}`, timeoutMs: 5000 }),
  );
});
