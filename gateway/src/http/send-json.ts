import type { ServerResponse } from 'node:http';

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Writes a JSON response: what express's `status(...).type('application/json').send(json)` writes
 * with ETags off (no response here has a validator, so no request is ever answered 304). Node
 * leaves out the body of a HEAD response itself.
 */
export function sendJson(response: ServerResponse, status: number, json: string): void {
  response.statusCode = status;
  response.setHeader('Content-Type', JSON_TYPE);
  response.setHeader('Content-Length', Buffer.byteLength(json));
  response.end(json);
}
