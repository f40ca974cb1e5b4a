import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, existsSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { sha256Hex } from '../gateway/src/keys/api-keys';
import { sendRaw, type RawReply } from './support/raw-http';
import { freePort } from './support/redis-server';
import { type ProcessStack, startProcessStack } from './support/process-stack';
import { STARTUP_TIMEOUT_MS } from './support/service-process';
import { waitFor } from './support/wait-for';

const ROOT = join(__dirname, '..');
const SECRET = 'library-callbacks-secret';
const ORIGIN = 'https://app.example.com';

/** A keys file in `dir` with one enterprise key, {@link SECRET}; returns its path. */
function writeKeysFile(dir: string): string {
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
  let dir: string;
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
    dir = mkdtempSync(join(tmpdir(), 'library-callbacks-'));
    const routesFile = join(dir, 'routes.yaml');
    const { port } = upstream.address() as { port: number };
    writeFileSync(routesFile, ['routes:', '  - prefix: /v1/store/odd', `    upstream: http://127.0.0.1:${port}`, '    methods: [GET]', '    timeoutMs: 5000', ''].join('\n'));
    stack = await startProcessStack({
      petService: { MONGODB_URI: '' },
      // A CORS list, so that every response has `Vary: Origin` for an upstream's Vary to join.
      gateway: { API_KEYS_FILE: writeKeysFile(dir), ROUTES_FILE: routesFile, CORS_ORIGINS: ORIGIN, REDIS_URL: '' },
    });
  });

  after(async () => {
    await stack?.stop();
    upstream?.close();
    rmSync(dir, { recursive: true, force: true });
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

/** Starts `entry` with its stdout on `stdout`: the log lines go nowhere the test reads. */
function startWithStdout(entry: string, env: NodeJS.ProcessEnv, stdout: 'pipe' | number): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', join(ROOT, entry)], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', stdout, 'ignore'],
  });
}

/** Sends SIGTERM; resolves with the exit code, or with `hung` (after a SIGKILL) when it outlives `ms`. */
async function stopWithin(child: ChildProcess, ms: number): Promise<number | null | 'hung'> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), ms);
  const [code, signal] = (await exited) as [number | null, NodeJS.Signals | null];
  clearTimeout(timer);
  return signal === 'SIGKILL' ? 'hung' : code;
}

/**
 * stdout that fails every write: a reader that went away (EPIPE: `npm start`'s parent killed, a
 * log shipper restarted) or a full disk (ENOSPC, standing for every other error, such as the EIO of
 * a terminal that hung up). Log lines are lost, but requests are served and SIGTERM stops the
 * process cleanly. sonic-boom emits each failed write as an 'error' event, which pino swallows for
 * EPIPE only, and its flush at exit retries any other failed write forever.
 */
describe('services whose stdout fails', function () {
  // Two processes started at once, 41 requests, two stops.
  this.timeout(STARTUP_TIMEOUT_MS + 60_000);
  const started: ChildProcess[] = [];
  let dir: string;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'library-callbacks-'));
  });

  afterEach(async () => {
    await Promise.all(started.splice(0).map((child) => stopWithin(child, 5000)));
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const destination of ['a pipe nobody reads (EPIPE)', 'a full disk (ENOSPC, /dev/full)'] as const) {
    it(`serve and stop cleanly when stdout is ${destination}`, async function () {
      const full = destination.includes('/dev/full');
      if (full && !existsSync('/dev/full')) this.skip(); // Linux only: /dev/full refuses every write with ENOSPC.
      const stdout = full ? openSync('/dev/full', 'w') : 'pipe';
      const [petPort, petAdmin, port, admin] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
      try {
        started.push(
          startWithStdout('pet-service/src/main.ts', { PET_SERVICE_PORT: String(petPort), ADMIN_PORT: String(petAdmin), MONGODB_URI: '', LOG_SLOW_CALL_MS: '0' }, stdout),
          startWithStdout(
            'gateway/src/main.ts',
            { PORT: String(port), ADMIN_PORT: String(admin), PET_SERVICE_ADDR: `127.0.0.1:${petPort}`, API_KEYS_FILE: writeKeysFile(dir), REDIS_URL: '' },
            stdout,
          ),
        );
      } finally {
        if (typeof stdout === 'number') closeSync(stdout);
      }
      // Closing the read end at once: every write the services make fails.
      for (const child of started) child.stdout?.destroy();
      // A process stuck writing its log would never answer; one that answers does so within the
      // gateway's own deadline for the pet service (2 s), however slowly a busy machine serves it.
      const list = (): Promise<number> =>
        fetch(`http://127.0.0.1:${port}/v1/pets`, { headers: { authorization: `Bearer ${SECRET}` }, signal: AbortSignal.timeout(10_000) }).then(
          (response) => response.status,
          () => 0,
        );
      // Started from source, they say they listen only on the stdout that fails: the port is polled.
      await waitFor(async () => (await list()) === 200, STARTUP_TIMEOUT_MS);
      // Each call logs a line in both services: kilobytes of lines, many failed writes.
      for (let call = 0; call < 40; call += 1) expect(await list(), `call ${call}`).to.equal(200);
      const codes = await Promise.all(started.splice(0).map((child) => stopWithin(child, 10_000)));
      expect(codes).to.deep.equal([0, 0]);
    });
  }
});
