import { request as httpRequest } from 'node:http';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import pino from 'pino';
import { NON_RECORDING_TRACER } from '@petstore/runtime';
import { attachContext } from '../../../src/edge/request-context';
import { assignRequestId, createRequestObserver } from '../../../src/edge/request-log';
import { listenOnLoopback, type LoopbackServer } from '../../../../system-test/support/loopback-server';

describe('request logging', () => {
  let server: LoopbackServer;
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
    const observe = createRequestObserver(pino(sink));
    server = await listenOnLoopback((request, response) => {
      const context = {
        requestId: assignRequestId(request, response),
        startedAt: process.hrtime.bigint(),
        span: NON_RECORDING_TRACER.startSpan('request'),
        key: undefined,
        route: undefined,
        cancel: undefined,
      };
      attachContext(request, context);
      observe(response);
      if (request.url === '/ok') {
        Object.assign(context, { key: { id: 'key-1' }, route: '/ok' });
        response.end(context.requestId);
      } else if (request.url === '/broken') {
        response.statusCode = 503;
        response.end('down');
      } else hung();
    });
    base = server.base;
  });
  afterEach(() => server.close());

  it('logs one line per answered request, with the id it echoes and hands on', async () => {
    const response = await fetch(`${base}/ok`, { headers: { 'x-request-id': 'trace-1' } });
    expect(response.headers.get('x-request-id')).to.equal('trace-1');
    expect(await response.text()).to.equal('trace-1');
    expect(lines).to.have.length(1);
    expect(lines[0]).to.include({ msg: 'request', level: 30, requestId: 'trace-1', method: 'GET', route: '/ok', status: 200, keyId: 'key-1' });
    expect(lines[0]!.duration).to.be.a('number');
  });

  it('logs a 5xx at error level as a failed request', async () => {
    const response = await fetch(`${base}/broken`);
    expect(response.status).to.equal(503);
    await response.text();
    expect(lines).to.have.length(1);
    expect(lines[0]).to.include({ msg: 'request failed', level: 50, route: 'unmatched', status: 503 });
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
