import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { sha256Hex } from '../gateway/src/keys/api-keys';
import { sendRaw, type RawReply } from './support/raw-http';
import { type ProcessStack, startProcessStack } from './support/process-stack';

const SECRET = 'library-callbacks-secret';
const ORIGIN = 'https://app.example.com';

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
  let upstream: Server;
  /** The bytes the upstream answers every request with. */
  let upstreamReply = '';

  before(async () => {
    // Raw bytes, so the reply can be what Node's client parser takes but no HTTP server would send.
    upstream = createServer((socket) => {
      let head = '';
      socket.on('data', (chunk: Buffer) => {
        head += chunk.toString('latin1');
        if (head.includes('\r\n\r\n')) socket.end(Buffer.from(upstreamReply, 'latin1'));
      });
      socket.on('error', () => undefined);
    }).listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    const dir = mkdtempSync(join(tmpdir(), 'library-callbacks-routes-'));
    const routesFile = join(dir, 'routes.yaml');
    const { port } = upstream.address() as { port: number };
    writeFileSync(routesFile, ['routes:', '  - prefix: /v1/store/odd', `    upstream: http://127.0.0.1:${port}`, '    methods: [GET]', '    timeoutMs: 5000', ''].join('\n'));
    stack = await startProcessStack({
      petService: { MONGODB_URI: '' },
      // A CORS list, so that every response has `Vary: Origin` for an upstream's Vary to join.
      gateway: { API_KEYS_FILE: writeKeysFile(), ROUTES_FILE: routesFile, CORS_ORIGINS: ORIGIN, REDIS_URL: '' },
    });
  });

  after(async () => {
    await stack?.stop();
    upstream?.close();
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

  // http-proxy emits 'proxyRes' from the upstream request's 'response' listener: Node's client parser
  // takes each of these, and Node's writer or express's `vary` throws on it.
  for (const [what, reply] of [
    ['a status below 100', 'HTTP/1.1 099 Odd\r\n'],
    ['a reason phrase with a DEL character', 'HTTP/1.1 200 O\x7fK\r\n'],
    ['a Vary that is no list of header names', 'HTTP/1.1 200 OK\r\nVary: accept@encoding\r\n'],
  ] as const) {
    it(`answers an upstream response with ${what} with 502, without the upstream's headers`, async () => {
      upstreamReply = `${reply}Set-Cookie: session=upstream\r\nX-Upstream: yes\r\nContent-Length: 2\r\n\r\nok`;
      const answer = await sendRaw(
        stack.gateway.port,
        Buffer.from(`GET /v1/store/odd/x HTTP/1.1\r\nHost: edge\r\nOrigin: ${ORIGIN}\r\nAuthorization: Bearer ${SECRET}\r\nConnection: close\r\n\r\n`),
      );
      expectError(answer, 502, 'bad_gateway', 'the upstream service failed to answer');
      expect(answer.headers).not.to.have.any.keys('set-cookie', 'x-upstream');
      expect(answer.headers['access-control-allow-origin']).to.equal(ORIGIN);
      expect(answer.headers['x-ratelimit-limit']).to.be.a('string');
      await stack.gateway.waitForLog((line) => line.msg === 'upstream response not relayable' && line.route === '/v1/store/odd');
      await expectServing();
    });
  }
});
