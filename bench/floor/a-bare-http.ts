/**
 * Floor variant a: node:http answering the gateway's list body, precomputed (`FLOOR_LIST_BODY_FILE`).
 * No gRPC: what HTTP alone costs.
 */
import { readFileSync } from 'node:fs';
import { listen, readServer, sendJson } from './variant-server';

const body = readFileSync(process.env.FLOOR_LIST_BODY_FILE!, 'utf8');

listen('floor a (node:http, precomputed body)', readServer((_request, response) => sendJson(response, 200, body)));
