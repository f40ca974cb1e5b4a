/**
 * Floor variant b: node:http and one ListPets per request through `createPetServiceClient` (its own
 * unary transport on node:http2, with its production defaults: deadline, read retries, round
 * robin, keepalive, refused streams sent again), the body written by the gateway's own `petsToJson`.
 */
import { createPetServiceClient } from '@petstore/proto';
import { DEADLINE_MS, PET_SERVICE_ADDR, serveListPets } from './variant-server';

const client = createPetServiceClient(PET_SERVICE_ADDR, { deadlineMs: DEADLINE_MS });

serveListPets('floor b (node:http + createPetServiceClient)', (request) => client.listPets(request), () => client.close());
