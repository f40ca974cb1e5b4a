/**
 * Floor variant b: node:http and one ListPets per request through `createPetServiceClient`
 * (grpc-js, with its production defaults: deadline, read retries, round_robin, keepalive), the
 * body written by the gateway's own `petsToJson`.
 */
import { createPetServiceClient } from '@petstore/proto';
import { DEADLINE_MS, PET_SERVICE_ADDR, serveListPets } from './variant-server';

const client = createPetServiceClient(PET_SERVICE_ADDR, { deadlineMs: DEADLINE_MS });

serveListPets('floor b (node:http + grpc-js)', (request) => client.listPets(request), () => client.close());
