import { Writable } from 'node:stream';
import { expect } from 'chai';
import pino from 'pino';
import { REDACTED_PATHS } from '../../src/logger';

describe('logger redaction', () => {
  const SECRET = 'Bearer pk_live_do-not-log-me';

  function logged(object: Record<string, unknown>): string {
    let text = '';
    const sink = new Writable({
      write: (chunk: Buffer, _encoding, done) => {
        text += chunk.toString();
        done();
      },
    });
    pino({ redact: [...REDACTED_PATHS] }, sink).info(object, 'line');
    return text;
  }

  const shapes: Array<[string, Record<string, unknown>]> = [
    ['an incoming request', { req: { method: 'GET', headers: { authorization: SECRET } } }],
    ['a request under another name', { request: { headers: { authorization: SECRET } } }],
    ['bare headers', { headers: { authorization: SECRET, host: 'x' } }],
    ['an error with its headers', { err: { message: 'failed', headers: { authorization: SECRET } } }],
    ['an error with the request it was made with', { err: { message: 'failed', config: { headers: { authorization: SECRET } } } }],
    ['an error holding its request', { err: { message: 'failed', request: { headers: { authorization: SECRET } } } }],
    ['an error holding its req', { err: { message: 'failed', req: { headers: { authorization: SECRET } } } }],
  ];
  for (const [name, object] of shapes) {
    it(`keeps the Authorization header out of ${name}`, () => {
      const text = logged(object);
      expect(text).to.not.include('pk_live');
      expect(text).to.include('[Redacted]');
    });
  }

  it('leaves a request line as it is', () => {
    const line = { requestId: 'r', method: 'GET', route: '/v1/pets', status: 200, duration: 1.5, keyId: 'acme' };
    expect(JSON.parse(logged(line))).to.include(line);
  });
});
