/**
 * Floor variant d: node:http and one ListPets per request through @connectrpc/connect-node's gRPC
 * transport (HTTP/2), with a client for the protoc-gen-es copy of the contract (bench/gen-es). Set
 * like variant b's grpc-js client where connect-node can be: the same deadline, keepalive pings
 * every 10 s with 5 s to answer, idle connections pinged too.
 */
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import type { Pet } from '@petstore/proto';
import { petsToJson } from '../../gateway/src/http/pet-json';
import { PetService } from '../gen-es/petstore/v1/pet_service_pb';
import { DEADLINE_MS, listen, PET_SERVICE_ADDR, readServer, sendBadGateway, sendJson } from './variant-server';

const transport = createGrpcTransport({
  baseUrl: `http://${PET_SERVICE_ADDR}`,
  defaultTimeoutMs: DEADLINE_MS,
  pingIntervalMs: 10_000,
  pingTimeoutMs: 5_000,
  pingIdleConnection: true,
});
const client = createClient(PetService, transport);
const request = { pageSize: 20 };

listen(
  'floor d (node:http + connect-node)',
  readServer((_request, response) => {
    client.listPets(request).then(
      // int64 fields arrive as bigint, which a template literal writes digit for digit, as it does
      // ts-proto's decimal strings: the same text, without a conversion the gateway would not make.
      ({ pets }) => sendJson(response, 200, petsToJson(pets as unknown as Pet[])),
      () => sendBadGateway(response),
    );
  }),
);
