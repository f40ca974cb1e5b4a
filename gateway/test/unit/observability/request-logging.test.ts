import { once } from 'node:events';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import express from 'express';
import pino from 'pino';
import { createRequestLogging, requestIdOf } from '../../../src/observability/request-logging';

describe('request logging', () => {
  let server: Server;
  let base: string;
  let lines: Array<Record<string, unknown>>;
  let logged: () => void;
  let hung: () => void;

  beforeEach(async () => {
    lines = [];
    const sink = new Writable({
      write: (chunk: Buffer, _encoding, done) => {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        logged?.();
        done();
      },
    });
    const app = express();
    app.use(createRequestLogging(pino(sink)));
    app.get('/ok', (_request, response) => {
      response.locals.apiKey = { id: 'key-1' };
      response.send(requestIdOf(response));
    });
    app.get('/broken', (_request, response) => {
      response.status(503).send('down');
    });
    app.get('/hang', () => hung());
    server = createServer(app).listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterEach(() => {
    server.closeAllConnections();
    server.close();
  });

  it('logs one line per answered request, with the id it echoes and hands on', async () => {
    const response = await fetch(`${base}/ok`, { headers: { 'x-request-id': 'trace-1' } });
    expect(response.headers.get('x-request-id')).to.equal('trace-1');
    expect(await response.text()).to.equal('trace-1');
    expect(lines).to.have.length(1);
    expect(lines[0]).to.include({ msg: 'request', level: 30, requestId: 'trace-1', method: 'GET', status: 200, keyId: 'key-1' });
    expect(lines[0]!.duration).to.be.a('number');
  });

  it('logs a 5xx at error level as a failed request', async () => {
    const response = await fetch(`${base}/broken`);
    expect(response.status).to.equal(503);
    await response.text();
    expect(lines).to.have.length(1);
    expect(lines[0]).to.include({ msg: 'request failed', level: 50, status: 503 });
    expect(lines[0]!.requestId).to.match(/^[0-9a-f-]{36}$/);
  });

  it('logs a request the client abandoned, once, without calling it a failure', async () => {
    const reached = new Promise<void>((resolve) => (hung = resolve));
    const line = new Promise<void>((resolve) => (logged = resolve));
    const client = httpRequest(`${base}/hang`);
    client.on('error', () => undefined);
    client.end();
    await reached;
    client.destroy();
    await line;
    expect(lines).to.have.length(1);
    expect(lines[0]).to.include({ msg: 'request aborted', level: 30, aborted: true });
  });
});
