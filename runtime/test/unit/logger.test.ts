import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
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

describe('createLogger', () => {
  it('writes every line whole and in order on stdout, multi-byte text included, however lines fill its batches', () => {
    // Lines of growing length cross the batches' 2 KiB minimum and 4 KiB most at every offset.
    const script = `
      const { createLogger, flushThenExit } = require(${JSON.stringify(join(__dirname, '..', '..', 'src', 'logger.ts'))});
      const logger = createLogger({ service: 'test', level: 'info', pretty: false });
      for (let i = 0; i < 600; i += 1) logger.info({ i, text: 'ünï 🐈 ' + 'x'.repeat(i % 97) }, 'line');
      flushThenExit(logger, 0);
    `;
    const output = execFileSync(process.execPath, ['--import', 'tsx', '-e', script], { encoding: 'utf8' });
    const lines = output.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.map(({ i, text, service, msg }) => ({ i, text, service, msg }))).to.deep.equal(
      Array.from({ length: 600 }, (_, i) => ({ i, text: `ünï 🐈 ${'x'.repeat(i % 97)}`, service: 'test', msg: 'line' })),
    );
  });
});
