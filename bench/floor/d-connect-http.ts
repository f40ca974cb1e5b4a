/**
 * Floor variant d: node:http and one ListPets per request through @connectrpc/connect-node's gRPC
 * transport (HTTP/2), with a client for the protoc-gen-es copy of the contract (bench/gen-es). Set
 * like variant b's grpc-js client where connect-node can be: the same deadline, keepalive pings
 * every 10 s with 5 s to answer, idle connections pinged too, a refused stream sent again once.
 */
import { ConnectError, createClient, type Interceptor } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import type { Pet } from '@petstore/proto';
import { petsToJson } from '../../gateway/src/http/pet-json';
import { PetService } from '../gen-es/petstore/v1/pet_service_pb';
import { DEADLINE_MS, listen, PET_SERVICE_ADDR, readServer, sendBadGateway, sendJson } from './variant-server';

/**
 * connect-node 2.2.0 destroys a connection that gets GOAWAY with no stream open with an error that
 * Node raises once the socket has closed; a call made meanwhile reconnects and removes the
 * session's error listeners, so that error crashes the process (connectrpc/connect-es#1768, open;
 * http2-session-manager.js lines 473-481 against the guard of `abort()`, lines 403-409). The pet
 * service sends that GOAWAY to every connection at its maximum age (30 s), and this variant died
 * of it within a minute of load. The guard the proposed fix (#1769) adds, on every session:
 */
const http2 = process.getBuiltinModule('node:http2');
const connectHttp2 = http2.connect;
http2.connect = ((...args: Parameters<typeof connectHttp2>) => connectHttp2(...args).on('error', () => undefined)) as typeof connectHttp2;

/**
 * Sends a call again, once, when its stream was refused (RFC 9113 section 8.7: the server processed
 * nothing of it), as `createPetServiceClient` does. connect-node retries nothing, and reports the
 * streams the pet service refuses as it recycles a connection as INTERNAL: without this, the
 * variant lost a few reads at every recycle (docs/decisions.md, the gateway's gRPC client).
 */
const resendRefused: Interceptor = (next) => async (request) => {
  try {
    return await next(request);
  } catch (error) {
    if (!(error instanceof ConnectError && error.rawMessage.includes('REFUSED_STREAM'))) throw error;
    return next(request);
  }
};

const transport = createGrpcTransport({
  baseUrl: `http://${PET_SERVICE_ADDR}`,
  defaultTimeoutMs: DEADLINE_MS,
  pingIntervalMs: 10_000,
  pingTimeoutMs: 5_000,
  pingIdleConnection: true,
  interceptors: [resendRefused],
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
