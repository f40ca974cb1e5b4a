import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { sha256Hex } from '../gateway/src/keys/api-keys';
import { sendRaw, type RawReply } from './support/raw-http';
import { type ProcessStack, startProcessStack } from './support/process-stack';

const SECRET = 'library-callbacks-secret';

/** A keys file with one enterprise key, {@link SECRET}, in a new directory; returns its path. */
function writeKeysFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'library-callbacks-'));
  const file = join(dir, 'keys.json');
  writeFileSync(file, JSON.stringify({ keys: [{ id: 'callbacks', sha256: sha256Hex(SECRET), plan: 'enterprise', limits: { perMinute: 1e6, perDay: 1e6 } }] }));
  return file;
}

function expectError(reply: RawReply, status: number, code: string, message: string): void {
  expect(reply.status, reply.body.toString()).to.equal(status);
  expect(reply.headers['content-type']).to.equal('application/json; charset=utf-8');
  expect(JSON.parse(reply.body.toString('utf8'))).to.deep.equal({ code, message, status });
}

/**
 * Issue 33: input that reaches code running in a library's callback or event listener, where a
 * throw escapes every promise and try/catch and ends the process (runtime/src/crash-handlers.ts).
 * Each case goes to the services as their own processes (`main.ts`), as in production: the answer
 * is the Error body, and the same process serves on.
 */
describe('library callbacks on the request path', function () {
  this.timeout(60_000);
  let stack: ProcessStack;

  before(async () => {
    stack = await startProcessStack({ petService: { MONGODB_URI: '' }, gateway: { API_KEYS_FILE: writeKeysFile(), REDIS_URL: '' } });
  });

  after(async () => {
    await stack?.stop();
  });

  /** The gateway is the process it was and still answers. */
  async function expectServing(): Promise<void> {
    const { child } = stack.gateway;
    expect(child.exitCode, 'the gateway exited').to.equal(null);
    expect(child.signalCode, 'the gateway was killed').to.equal(null);
    const reply = await sendRaw(stack.gateway.port, Buffer.from('GET /v1/openapi.json HTTP/1.1\r\nHost: edge\r\nConnection: close\r\n\r\n'));
    expect(reply.status).to.equal(200);
  }

  // Node's `url.parse`, which parseurl calls for a target that does not start with `/`, throws on an
  // authority with a port that is not a number; llhttp accepts it. Node calls the 'request' listener
  // outside any try/catch. HTTP/1.0 needs no Host, which took it past the target's check.
  for (const target of ['http://a:b/v1/pets', 'http://[::1/v1/pets', 'http://edge:1x/docs']) {
    it(`answers the absolute-form target ${target} with 400, on both ports, in HTTP/1.1 and 1.0`, async () => {
      for (const port of [stack.gateway.port, stack.gateway.adminPort]) {
        for (const head of ['HTTP/1.1\r\nHost: edge', 'HTTP/1.0']) {
          const reply = await sendRaw(port, Buffer.from(`GET ${target} ${head}\r\nConnection: close\r\n\r\n`, 'latin1'));
          expectError(reply, 400, 'invalid_request', 'request target is not a valid URL');
        }
      }
      await expectServing();
    });
  }
});
