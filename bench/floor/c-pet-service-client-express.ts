/**
 * Floor variant c: variant b's call and answer, routed by express 5 (set up as bench/bare-server.ts:
 * no `X-Powered-By`, no ETag). The difference from b is what express costs on an asynchronous response.
 */
import { createServer } from 'node:http';
import express from 'express';
import { createPetServiceClient } from '@petstore/proto';
import { petsToJson } from '../../gateway/src/http/pet-json';
import { DEADLINE_MS, LIST_20, listen, PET_SERVICE_ADDR, sendBadGateway, sendJson } from './variant-server';

const client = createPetServiceClient(PET_SERVICE_ADDR, { deadlineMs: DEADLINE_MS });

const app = express();
app.disable('x-powered-by');
app.set('etag', false);
app.get('/v1/pets', async (_request, response) => {
  try {
    const { pets } = await client.listPets(LIST_20);
    sendJson(response, 200, petsToJson(pets));
  } catch {
    sendBadGateway(response);
  }
});

listen('floor c (express 5 + createPetServiceClient)', createServer(app), () => client.close());
