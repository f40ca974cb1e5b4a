export { createPetstoreClient } from './petstore-client';
export type { CallOptions, CreatePetOptions, DeletePetOptions, PetstoreClient, PetstoreClientOptions, UpdatePetOptions } from './petstore-client';
export { PetstoreError } from './petstore-error';
export type { RateLimitSnapshot } from './rate-limit-gate';
export type { RetryOptions } from './retry-policy';
export type { Sleep } from './sleep';
export type { ErrorCode, Int64, Int64Mode, ListPetsQuery, NewPet, Pet, PetChange, PetStatus, TaggedPet } from './types';
