/**
 * The baseline for `npm run bench`: a bare express 5 server that answers the gateway's paths with
 * precomputed bodies, so the ratio isolates what the gateway adds (auth, limits, validation, gRPC,
 * the pet service, logging). The write path still parses the JSON body, as any server must.
 */
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import express from 'express';

const listBody = readFileSync(process.env.BARE_LIST_BODY_FILE!, 'utf8');
const createdBody = readFileSync(process.env.BARE_CREATED_BODY_FILE!, 'utf8');

const app = express();
app.disable('x-powered-by');
app.set('etag', false);
app.get('/v1/pets', (_request, response) => {
  response.type('application/json').send(listBody);
});
app.post('/v1/pets', express.json(), (_request, response) => {
  response.status(201).type('application/json').send(createdBody);
});
const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(JSON.stringify({ msg: 'bare server listening', port: (server.address() as AddressInfo).port, adminPort: 0 }));
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));
