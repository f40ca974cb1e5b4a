/**
 * What every variant of the floor benchmark (bench/floor.ts) shares: listening, the JSON answer
 * the gateway writes, and the settings the harness passes.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type ListPetsRequest, type Pet, PetStatus } from '@petstore/proto';
import { petsToJson } from '../../gateway/src/http/pet-json';
import { sendJson } from '../../gateway/src/http/send-json';

/** The gateway's own writer of a JSON response: every variant answers exactly as the pets routes do. */
export { sendJson };

/** The pet service, as `host:port`. */
export const PET_SERVICE_ADDR = process.env.PET_SERVICE_ADDR ?? '';

/** The deadline of every call, as the gateway's default `PET_SERVICE_TIMEOUT_MS`. */
export const DEADLINE_MS = 2000;

/** The page every variant asks for: the first 20, no filter, as the gateway's `GET /v1/pets?limit=20`. */
export const LIST_20: ListPetsRequest = { pageSize: 20, pageToken: '', status: PetStatus.PET_STATUS_UNSPECIFIED };

/** The path the harness loads; the variants answer it alone, and 404 anything else. */
export const READ_PATH = '/v1/pets?limit=20';

/** A failed call: 502 with the gateway's error body shape. The harness counts any non-200 as a failure. */
export function sendBadGateway(response: ServerResponse): void {
  sendJson(response, 502, '{"code":"bad_gateway","message":"the pet service call failed","status":502}');
}

/**
 * A node:http server whose every request goes to `handle`, except paths other than
 * {@link READ_PATH}, answered 404.
 */
export function readServer(handle: (request: IncomingMessage, response: ServerResponse) => void): Server {
  return createServer((request, response) => {
    if (request.method !== 'GET' || request.url !== READ_PATH) {
      sendJson(response, 404, '{"code":"not_found","message":"no such route","status":404}');
      return;
    }
    handle(request, response);
  });
}

/** Listens on `PORT` (0: any) on the loopback, prints the line the harness waits for, and stops on SIGTERM. */
export function listen(name: string, server: Server, close: () => void = () => undefined): void {
  server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
    console.log(JSON.stringify({ msg: `${name} listening`, port: (server.address() as AddressInfo).port }));
  });
  process.once('SIGTERM', () => {
    close();
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}

/**
 * {@link listen} on a {@link readServer} that answers each read with `listPets(LIST_20)`'s pets as
 * the gateway writes them (`petsToJson`), or 502 when the call failed: the variants that differ
 * only in how they make the call.
 */
export function serveListPets(name: string, listPets: (request: ListPetsRequest) => Promise<{ pets: Pet[] }>, close?: () => void): void {
  listen(
    name,
    readServer((_request, response) => {
      listPets(LIST_20).then(
        ({ pets }) => sendJson(response, 200, petsToJson(pets)),
        () => sendBadGateway(response),
      );
    }),
    close,
  );
}
