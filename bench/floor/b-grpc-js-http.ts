/**
 * Floor variant b: node:http and one ListPets per request through `createPetServiceClient`
 * (grpc-js, with its production defaults: deadline, read retries, round_robin, keepalive), the
 * body written by the gateway's own `petsToJson`.
 */
import { createPetServiceClient } from '@petstore/proto';
import { petsToJson } from '../../gateway/src/http/pet-json';
import { DEADLINE_MS, LIST_20, listen, PET_SERVICE_ADDR, readServer, sendBadGateway, sendJson } from './variant-server';

const client = createPetServiceClient(PET_SERVICE_ADDR, { deadlineMs: DEADLINE_MS });

listen(
  'floor b (node:http + grpc-js)',
  readServer((_request, response) => {
    client.listPets(LIST_20).then(
      ({ pets }) => sendJson(response, 200, petsToJson(pets)),
      () => sendBadGateway(response),
    );
  }),
  () => client.close(),
);
