import { MemoryPetRepository } from '../../src/memory-pet-repository';
import { describePetRepositoryContract } from '../contract/pet-repository-contract';

describePetRepositoryContract('MemoryPetRepository', async (now) => new MemoryPetRepository({ now }));
