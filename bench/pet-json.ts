/**
 * `npm run bench:pet-json`: the CPU of turning a pet service answer into the HTTP body, in this
 * process, for a ListPets page of 20 (the pets `bench/list-pets-load.ts` seeds, and a next-page
 * token) and for one pet (GetPet, CreatePet):
 *
 *   plain  today's path: the generated decoder, then `petsToJson` / `petToJson`
 *   wire   `listPetsResponseToJson` / `petResponseToJson`, straight from the bytes
 *
 * and, on a `node:http` server on port 0 in this process, the CPU a route spends making the body
 * and sending it with `sendJson` (the response's bytes written to the socket included; the client's
 * work, in this process too, is not counted): plain, wire, and `sendJson` alone given the same page
 * made once, as a string and as a Buffer, which tells which of the two the writer should return.
 *
 * Variants run in alternating rounds; each figure is the median over BENCH_ROUNDS rounds (default
 * 7) of µs per call. BENCH_ITERATIONS calls per conversion round (default 200000), BENCH_REQUESTS
 * requests per send round (default 20000).
 */
import { request as httpRequest, Agent, createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetPetResponse, ListPetsResponse, type Pet } from '@petstore/proto';
import { petsToJson, petToJson } from '../gateway/src/http/pet-json';
import { listPetsResponseToJson, petResponseToJson } from '../gateway/src/http/pet-json-from-wire';
import { sendJson } from '../gateway/src/http/send-json';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 200_000);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 20_000);
const CONNECTIONS = 8;

const pets: Pet[] = Array.from({ length: 20 }, (_, index) => ({
  id: String(481 + index),
  name: `pet-${480 + index}`,
  categoryId: String(1 + ((480 + index) % 50)),
  status: 1 + ((480 + index) % 3),
  etag: '',
}));
const PAGE = ListPetsResponse.encode({ pets, nextPageToken: 'djEuNTAwLmF2YWlsYWJsZS5iM2Y0YzFkOGE5ZTI3NjEwNWQ0YzhhOWUyNzYxMDVk' }).finish();
const ONE = GetPetResponse.encode({ pet: pets[0] }).finish();

type Conversion = () => unknown;
const CONVERSIONS: Record<string, Conversion> = {
  'page plain': () => petsToJson(ListPetsResponse.decode(PAGE).pets),
  'page wire': () => listPetsResponseToJson(PAGE),
  'one plain': () => petToJson(GetPetResponse.decode(ONE).pet!),
  'one wire': () => petResponseToJson(ONE),
};

type Send = (response: ServerResponse) => void;
const PAGE_TEXT = listPetsResponseToJson(PAGE).body;
const PAGE_BYTES = Buffer.from(PAGE_TEXT);
const SENDS: Record<string, Send> = {
  'send plain': (response) => sendJson(response, 200, petsToJson(ListPetsResponse.decode(PAGE).pets)),
  'send wire': (response) => sendJson(response, 200, listPetsResponseToJson(PAGE).body),
  'sendJson, a string': (response) => sendJson(response, 200, PAGE_TEXT),
  // sendJson's own statements, given a Buffer (its signature takes a string).
  'sendJson, a Buffer': (response) => {
    response.statusCode = 200;
    response.setHeader('Content-Type', 'application/json; charset=utf-8');
    response.setHeader('Content-Length', PAGE_BYTES.length);
    response.end(PAGE_BYTES);
  },
};

function microsPerCall(conversion: Conversion): number {
  const start = process.cpuUsage();
  for (let index = 0; index < ITERATIONS; index += 1) conversion();
  const { user, system } = process.cpuUsage(start);
  return (user + system) / ITERATIONS;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  for (const conversion of Object.values(CONVERSIONS)) microsPerCall(conversion);
  const byConversion = new Map<string, number[]>(Object.keys(CONVERSIONS).map((name) => [name, []]));
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const [name, conversion] of Object.entries(CONVERSIONS)) byConversion.get(name)!.push(microsPerCall(conversion));
  }

  let send: Send = SENDS['send plain']!;
  let spent = 0;
  // The handler's CPU time (this thread's), not its wall time, which other processes stretch.
  const server = createServer((_request, response) => {
    const start = process.threadCpuUsage();
    send(response);
    const { user, system } = process.threadCpuUsage(start);
    spent += user + system;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const get = () =>
    new Promise<void>((resolve, reject) => {
      httpRequest({ port, host: '127.0.0.1', path: '/v1/pets?limit=20', agent }, (response) => {
        response.resume();
        response.on('end', resolve);
      }).on('error', reject).end();
    });
  const sendRound = async (requests: number): Promise<number> => {
    spent = 0;
    let left = requests;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (left > 0) {
          left -= 1;
          await get();
        }
      }),
    );
    return spent / requests;
  };
  for (const variant of Object.values(SENDS)) {
    send = variant;
    await sendRound(REQUESTS / 4);
  }
  const bySend = new Map<string, number[]>(Object.keys(SENDS).map((name) => [name, []]));
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const [name, variant] of Object.entries(SENDS)) {
      send = variant;
      bySend.get(name)!.push(await sendRound(REQUESTS));
    }
  }
  agent.destroy();
  server.close();

  console.log(`µs per call, median of ${ROUNDS} rounds (conversions: CPU, ${ITERATIONS} calls a round; sends: the handler's CPU, ${REQUESTS} requests a round)`);
  for (const [name, values] of [...byConversion, ...bySend]) console.log(`  ${name.padEnd(22)} ${median(values).toFixed(2)}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
