import { MemoryPetRepository } from '../../../src/store/memory-pet-repository';
import { describePetRepositoryContract } from './pet-repository-contract';

describePetRepositoryContract('MemoryPetRepository', async (now) => new MemoryPetRepository({ now }));
