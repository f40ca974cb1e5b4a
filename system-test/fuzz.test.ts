import { METHODS } from 'node:http';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import fc from 'fast-check';
import pino from 'pino';
import { CORS_ALLOWED_HEADERS } from '../gateway/src/edge/cors-policy';
import { createMetrics, type GatewayMetrics } from '../gateway/src/observability/metrics';
import { FUZZ_SEED } from './support/fuzz-seed';
import { sendRaw, sendRawPipelined } from './support/raw-http';
import { startTestStack, TEST_KEYS, type TestStack } from './support/test-stack';

const deepNesting = fc.integer({ min: 1, max: 20_000 }).map((depth) => '['.repeat(depth) + ']'.repeat(depth));
const hugeNumber = fc.stringMatching(/^-?[1-9][0-9]{15,400}(\.[0-9]{1,5})?(e[+-]?[0-9]{1,4})?$/);
const operatorLike = fc.constantFrom(
  '{"name":{"$gt":""},"categoryId":1}',
  '{"name":"a","categoryId":{"$ne":null}}',
  '{"__proto__":{"isAdmin":true},"name":"a","categoryId":1}',
  '{"constructor":{"prototype":{"x":1}},"name":"a","categoryId":1}',
  '{"name":"a","categoryId":1,"status":{"$in":["sold"]}}',
);
const jsonBody = fc.oneof(
  fc.json(),
  fc.record({ name: fc.string({ unit: 'binary', maxLength: 120 }), categoryId: fc.oneof(fc.bigInt(), fc.double(), fc.string()) }).map((value) =>
    JSON.stringify(value, (_key, item: unknown) => (typeof item === 'bigint' ? Number(item) : item)),
  ),
  hugeNumber.map((number) => `{"name":"n","categoryId":${number}}`),
  deepNesting,
  operatorLike,
);
const body = fc.oneof(
  jsonBody.map((text) => Buffer.from(text)),
  fc.uint8Array({ maxLength: 512 }).map((bytes) => Buffer.from(bytes)),
  fc.constant(Buffer.from([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0xff, 0xfe, 0x22, 0x7d])),
);
const segment = fc.oneof(
  fc.constantFrom('v1', 'pets', '1', '9223372036854775807', '9223372036854775808', '..', '%2e%2e', '%zz', '%ff', '%00', 'openapi.json'),
  fc.stringMatching(/^[A-Za-z0-9._~%-]{0,20}$/),
);
const query = fc.array(
  fc.tuple(
    fc.constantFrom('limit', 'status', 'cursor', '__proto__', 'limit[]', 'status[$ne]', 'x'),
    fc.oneof(fc.stringMatching(/^[A-Za-z0-9%._+-]{0,30}$/), fc.constantFrom('20', '0', '101', '-1', '1e2', 'sold', 'AVAILABLE')),
  ),
  { maxLength: 4 },
);
const path = fc.oneof(
  fc.constantFrom('/v1/pets', '/v1/pets/1', '/v1/openapi.json', '/v1', '/'),
  fc.array(segment, { minLength: 1, maxLength: 5 }).map((parts) => `/${parts.join('/')}`),
  fc.stringMatching(/^\/[\x21-\x7e]{0,40}$/),
  // Raw bytes 0x80-0xFF: the request is sent as latin1, one byte per character.
  fc.stringMatching(/^\/[\x21-\x7e\x80-\xff]{0,40}$/),
);
const method = fc.oneof(
  fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS', 'TRACE', 'PROPFIND'),
  fc.stringMatching(/^[A-Z]{1,12}$/),
);
const header = fc.tuple(
  fc.oneof(fc.constant('X-Request-Id'), fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,20}$/)),
  fc.oneof(fc.stringMatching(/^[\x20-\x7e]{0,60}$/), fc.stringMatching(/^[\x20-\x7e\x80-\xff]{0,60}$/)),
);
const authorization = fc.option(
  fc.oneof(
    fc.constant(`Bearer ${TEST_KEYS.enterprise}`),
    fc.constant(`bearer ${TEST_KEYS.enterprise}`),
    fc.stringMatching(/^[\x20-\x7e]{0,80}$/),
  ),
);
const contentType = fc.option(
  fc.constantFrom('application/json', 'application/json; charset=utf-8', 'application/json; charset=latin1', 'application/json; charset=nope', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', '*/*', 'application/json; charset=utf-16'),
);

/** The one origin CORS_ORIGINS lists for the fuzzed gateway. */
const ALLOWED_ORIGIN = 'https://app.example.com';
const origin = fc.oneof(
  fc.constant(ALLOWED_ORIGIN),
  fc.constantFrom('https://evil.example.com', 'null', `${ALLOWED_ORIGIN}/`, 'https://APP.example.com', 'http://app.example.com', `${ALLOWED_ORIGIN}.evil.example`, '*', ''),
  fc.stringMatching(/^[\x20-\x7e]{0,60}$/),
  fc.stringMatching(/^[\x20-\x7e\x80-\xff]{0,60}$/),
);
const requestMethod = fc.option(fc.oneof(fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'get', '*'), fc.stringMatching(/^[\x20-\x7e\x80-\xff]{0,20}$/)));
const requestHeaders = fc.option(
  fc.oneof(
    fc.subarray([...CORS_ALLOWED_HEADERS, 'X-Other', 'Cookie']).map((names) => names.join(', ').toLowerCase()),
    fc.stringMatching(/^[\x20-\x7e\x80-\xff]{0,60}$/),
  ),
);
/**
 * Whether a status is one a random request may get: no 5xx but 501, the refusal of a method HTTP
 * parsers do not know (`fc.stringMatching(/^[A-Z]{1,12}$/)` makes many).
 */
const answered = (status: number): boolean => (status >= 200 && status <= 499) || status === 501;
/** Paths a preflight from the allowed origin must be answered on with 204, whatever follows. */
const ANSWERED_PATHS = ['/v1/pets', '/v1/pets/1', '/v1/pets/9223372036854775808', '/v1/no-such-path', '/v1/openapi.json'];
// Issue 17: the framing and text the outside run found gaps in, each with the answer it must get.
const CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i; // Node's own test of an Expect value
const hostField = fc.tuple(fc.constantFrom('Host', 'host', 'HOST'), fc.constantFrom('fuzz', 'fuzz', 'other.example', '127.0.0.1:1'));
const credential = fc.constantFrom(TEST_KEYS.free, TEST_KEYS.enterprise, 'bogus-secret', '');
const expectation = fc.oneof(
  fc.constantFrom('100-continue', '100-CONTINUE', 'foo', '', '200-ok', '100-continue, foo', '100-continuex'),
  fc.stringMatching(/^[\x20-\x7e]{0,24}$/),
);
const invalidUtf8 = fc.constantFrom([0x80], [0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xf4, 0x90, 0x80, 0x80], [0xc3]);
const petName = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 });
const hostileBody = fc.oneof(
  petName.map((name) => ({ bytes: Buffer.from(JSON.stringify({ name, categoryId: 1 })), invalidUtf8: false, name })),
  fc.tuple(petName, invalidUtf8, fc.nat(20)).map(([name, bad, at]) => {
    const text = Buffer.from(JSON.stringify({ name, categoryId: 1 }));
    const cut = Math.min(at, text.length - 1);
    return { bytes: Buffer.concat([text.subarray(0, cut), Buffer.from(bad), text.subarray(cut)]), invalidUtf8: true };
  }),
  fc.constantFrom('\\ud800', '\\udfff', 'a\\u0000', '\\u001b', '\\u007f', '\u0085').map((name) => ({
    bytes: Buffer.from(`{"name":"${name}","categoryId":1}`),
    invalidUtf8: false,
  })),
  fc.integer({ min: 1, max: 4000 }).map((depth) => ({ bytes: Buffer.from(`{"name":"n","categoryId":1,"x":${'['.repeat(depth)}${']'.repeat(depth)}}`), invalidUtf8: false })),
);

describe('gateway under random requests (fast-check)', function () {
  this.timeout(180_000);
  let stack: TestStack;
  let port: number;
  let metrics: GatewayMetrics;
  /** Every log line the gateway wrote, parsed; a line that is not JSON is kept as its text. */
  const logs: Array<Record<string, unknown> | string> = [];

  before(async () => {
    metrics = createMetrics();
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        const text = chunk.toString();
        try {
          logs.push(JSON.parse(text) as Record<string, unknown>);
        } catch {
          logs.push(text);
        }
        done();
      },
    });
    stack = await startTestStack({ logger: pino(sink), metrics, corsOrigins: [ALLOWED_ORIGIN] });
    port = Number(new URL(stack.baseUrl).port);
  });

  after(async () => {
    await stack.close();
  });

  // Found by the property below (seed -391131256): a target that parseurl reads as having no path
  // got express's HTML 404 page.
  it('answers a target without a path (/\\#@!) with 400 and the Error body', async () => {
    const reply = await sendRaw(port, Buffer.from('GET /\\#@! HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n\r\n', 'latin1'));
    expect(reply.status).to.equal(400);
    expect(reply.headers['content-type']).to.match(/^application\/json/);
    expect(JSON.parse(reply.body.toString('utf8'))).to.deep.equal({ code: 'invalid_request', message: 'request target has no path', status: 400 });
  });

  it('never answers 5xx, always with a JSON Error body for 4xx, and still serves afterwards', async () => {
    await fc.assert(
      fc.asyncProperty(
        method, path, query, authorization, contentType, fc.array(header, { maxLength: 4 }), fc.option(body), fc.boolean(),
        async (verb, target, params, auth, type, extra, payload, gzip) => {
          const search = params.length === 0 ? '' : `?${params.map(([key, value]) => `${key}=${value}`).join('&')}`;
          const lines = [`${verb} ${target}${search} HTTP/1.1`, 'Host: fuzz', 'Connection: close'];
          if (auth !== null) lines.push(`Authorization: ${auth}`);
          if (type !== null) lines.push(`Content-Type: ${type}`);
          if (gzip) lines.push('Content-Encoding: gzip');
          for (const [name, value] of extra) {
            if (!/^(content-length|transfer-encoding|connection|host)$/i.test(name)) lines.push(`${name}: ${value}`);
          }
          if (payload !== null) lines.push(`Content-Length: ${payload.length}`);
          const request = Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), payload ?? Buffer.alloc(0)]);
          const reply = await sendRaw(port, request);
          expect(reply.status, `${verb} ${target}${search}`).to.satisfy(answered);
          if (reply.status >= 400 && verb !== 'HEAD') {
            expect(reply.headers['content-type']).to.equal('application/json; charset=utf-8');
            expect(reply.headers.date).to.be.a('string');
            const error = JSON.parse(reply.body.toString('utf8')) as { code: unknown; message: unknown; status: unknown };
            expect(error.status).to.equal(reply.status);
            expect(error.code).to.be.a('string');
            expect(error.message).to.be.a('string');
          }
        },
      ),
      { numRuns: 3000, seed: FUZZ_SEED },
    );

    expect(logs.filter((line) => typeof line === 'string'), 'log lines that are not JSON').to.deep.equal([]);
    const lines = logs as Array<Record<string, unknown>>;
    expect(lines.filter((line) => line.msg === 'request').length, 'request lines').to.be.above(1000);
    expect(lines.filter((line) => (line.level as number) >= 50), 'error lines').to.deep.equal([]);
    expect(
      lines.filter((line) => line.requestId !== undefined && !/^[A-Za-z0-9._~:+/=-]{1,128}$/.test(String(line.requestId))),
      'lines with an insane request id',
    ).to.deep.equal([]);
    const text = await metrics.registry.metrics();
    expect(text).to.match(/^http_requests_total\{[^}]*status="4\d\d"\} \d+$/m);
    expect(text).to.not.match(/^http_requests_total\{[^}]*status="5/m);

    const headers = { authorization: `Bearer ${TEST_KEYS.enterprise}`, 'content-type': 'application/json' };
    const created = await fetch(`${stack.baseUrl}/v1/pets`, { method: 'POST', headers, body: '{"name":"after","categoryId":1}' });
    expect(created.status).to.equal(201);
    const listed = await fetch(`${stack.baseUrl}/v1/pets?limit=100`, { headers });
    expect(listed.status).to.equal(200);
    expect(await listed.text()).to.include('"name":"after"');
  });

  it("answers random preflights without 5xx: a preflight's 204 only to the allowed origin, CORS headers on every answer to it and none to others", async () => {
    // A pet of this property's own, whatever the properties before it left (issue 47: a DELETE of
    // a pet answers 204 too, and is no preflight); its first case deletes it from the allowed
    // origin (found by the seed 20261123 after the property above: DELETE /v1/pets/1).
    const headers = { authorization: `Bearer ${TEST_KEYS.enterprise}`, 'content-type': 'application/json' };
    const created = await fetch(`${stack.baseUrl}/v1/pets`, { method: 'POST', headers, body: '{"name":"preflights","categoryId":1}' });
    expect(created.status).to.equal(201);
    const pet = `/v1/pets/${((await created.json()) as { id: number }).id}`;
    let deleted = 0;
    let clock = Date.now();
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.constant('OPTIONS'), method),
        fc.oneof(fc.constantFrom(...ANSWERED_PATHS), path),
        query, origin, requestMethod, requestHeaders, authorization, fc.array(header, { maxLength: 3 }), fc.option(body),
        async (verb, target, params, from, asked, askedHeaders, auth, extra, payload) => {
          // A fresh minute for each case: a preflight is charged to the client IP, and the property
          // is about what is answered, not about running out.
          stack.setNow((clock += 60_000));
          const search = params.length === 0 ? '' : `?${params.map(([key, value]) => `${key}=${value}`).join('&')}`;
          const lines = [`${verb} ${target}${search} HTTP/1.1`, 'Host: fuzz', 'Connection: close', `Origin: ${from}`];
          if (asked !== null) lines.push(`Access-Control-Request-Method: ${asked}`);
          if (askedHeaders !== null) lines.push(`Access-Control-Request-Headers: ${askedHeaders}`);
          if (auth !== null) lines.push(`Authorization: ${auth}`);
          for (const [name, value] of extra) {
            if (!/^(content-length|transfer-encoding|connection|host|origin|expect)$/i.test(name)) lines.push(`${name}: ${value}`);
          }
          if (payload !== null) lines.push(`Content-Length: ${payload.length}`);
          const request = Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), payload ?? Buffer.alloc(0)]);
          const reply = await sendRaw(port, request);
          const what = `${verb} ${target}${search} from ${JSON.stringify(from)} asking ${JSON.stringify(asked)}`;
          expect(reply.status, what).to.satisfy(answered);
          if (reply.status >= 400 && verb !== 'HEAD') {
            const error = JSON.parse(reply.body.toString('utf8')) as { code: unknown; message: unknown; status: unknown };
            expect(error.status, what).to.equal(reply.status);
            expect(error.code, what).to.be.a('string');
            expect(error.message, what).to.be.a('string');
          }
          // Only Node's own refusals of a malformed request or an unknown method are answered before the edge.
          if (reply.headers['x-request-id'] === undefined) {
            expect(reply.status, what).to.be.oneOf([400, 501]);
            return;
          }
          // Node trims the value, as browsers never send it padded.
          const allowed = from.trim() === ALLOWED_ORIGIN;
          expect(reply.headers.vary, what).to.equal('Origin');
          expect(reply.headers['access-control-allow-origin'], what).to.equal(allowed ? ALLOWED_ORIGIN : undefined);
          const preflight = allowed && verb === 'OPTIONS' && asked !== null;
          if (preflight && ANSWERED_PATHS.includes(target)) expect(reply.status, what).to.equal(204);
          // An OPTIONS' 204 is a preflight's answer; a DELETE's is the pet deleted, an ordinary answer.
          if (reply.status === 204 && verb === 'DELETE') deleted += 1;
          if (reply.status === 204 && verb !== 'DELETE') {
            expect(preflight, what).to.equal(true);
            expect(reply.headers['access-control-allow-headers'], what).to.equal(CORS_ALLOWED_HEADERS.join(', '));
            expect(reply.headers['access-control-max-age'], what).to.equal('7200');
            expect(reply.body.length, what).to.equal(0);
          } else {
            expect(reply.headers['access-control-allow-methods'], what).to.equal(undefined);
          }
        },
      ),
      { numRuns: 3000, seed: FUZZ_SEED, examples: [['DELETE', pet, [], ALLOWED_ORIGIN, 'DELETE', null, `Bearer ${TEST_KEYS.enterprise}`, [], null]] },
    );
    expect(deleted, 'DELETEs answered 204').to.be.above(0);
  });

  it('answers duplicate headers, odd Expect values and invalid UTF-8 as RFC 9112 and the Error body require, storing no changed text', async () => {
    let run = 0;
    const start = Date.UTC(2031, 0, 1);
    /** The names of the well-formed bodies answered 201, as sent. */
    const created = new Set<string>();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('HTTP/1.1', 'HTTP/1.1', 'HTTP/1.0'),
        fc.constantFrom('GET /v1/pets', 'POST /v1/pets', 'POST /v1/pets', 'GET /v1/openapi.json', 'GET /v1/pets/1'),
        // Mostly well-formed, so that enough requests get as far as the body.
        fc.oneof({ weight: 3, arbitrary: hostField.map((field) => [field]) }, fc.array(hostField, { maxLength: 3 })),
        fc.oneof({ weight: 3, arbitrary: fc.constantFrom(TEST_KEYS.free, TEST_KEYS.enterprise).map((secret) => [secret]) }, fc.array(credential, { maxLength: 3 })),
        fc.option(expectation, { freq: 2 }),
        hostileBody,
        async (version, target, hosts, credentials, expected, body) => {
          // Every case in a day of its own: no window or ban carries over between cases.
          run += 1;
          stack.setNow(start + run * 86_400_000);
          const post = target.startsWith('POST');
          const lines = [`${target} ${version}`, ...hosts.map(([name, value]) => `${name}: ${value}`), 'Connection: close'];
          for (const secret of credentials) lines.push(`Authorization: Bearer ${secret}`);
          if (expected !== null) lines.push(`Expect: ${expected}`);
          if (post) lines.push('Content-Type: application/json', `Content-Length: ${body.bytes.length}`);
          const answer = await sendRaw(port, Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), post ? body.bytes : Buffer.alloc(0)]));
          if (post && answer.status === 201 && 'name' in body) created.add(body.name);

          expect(answer.status, lines.join(' | ')).to.be.within(200, 499);
          let error: { code: string; message: string; status: number } | undefined;
          if (answer.status >= 400) {
            expect(answer.headers['content-type']).to.match(/^application\/json/);
            error = JSON.parse(answer.body.toString('utf8')) as { code: string; message: string; status: number };
            expect(error.status).to.equal(answer.status);
          }
          const http11 = version === 'HTTP/1.1';
          if (http11 && expected !== null && !CONTINUE.test(expected)) {
            expect(error?.message).to.equal('Expect: only 100-continue is supported');
            expect(answer.status).to.equal(417);
          } else if (hosts.length > 1) {
            expect(error?.message).to.equal('Host: must be given once');
          } else if (hosts.length === 0 && http11) {
            expect(error?.message).to.equal('Host: is required in an HTTP/1.1 request');
          } else if (target !== 'GET /v1/openapi.json' && credentials.length > 1) {
            expect(error?.message).to.equal('Authorization: must be given once');
            expect(answer.headers.ratelimit).to.match(/^"ip-minute";r=\d+;t=\d+$/);
          } else if (post && credentials.length === 1 && credentials[0] !== 'bogus-secret' && credentials[0] !== '' && body.invalidUtf8) {
            expect(error?.message).to.equal('body: is not valid UTF-8');
          }
        },
      ),
      { numRuns: 2500, seed: FUZZ_SEED },
    );

    const names: string[] = [];
    for (let page: string | undefined = '/v1/pets?limit=100'; page !== undefined; ) {
      const listed = await fetch(stack.baseUrl + page, { headers: { authorization: `Bearer ${TEST_KEYS.enterprise}` } });
      names.push(...((await listed.json()) as Array<{ name: string }>).map((pet) => pet.name));
      page = /^<([^>]+)>; rel="next"$/.exec(listed.headers.get('link') ?? '')?.[1];
    }
    expect(names.length, 'pets created by the property').to.be.above(100);
    for (const name of names) {
      // Stored as one of the well-formed bodies sent it: a lone surrogate (Cs), a replacement
      // character for bytes that were not UTF-8 or a control character (Cc) would be text changed
      // or let through. (A name may hold U+FFFD itself, sent as such: fast-check's graphemes do.)
      expect(created.has(name), JSON.stringify(name)).to.equal(true);
      expect(name, JSON.stringify(name)).to.not.match(/[\p{Cc}\p{Cs}]/u);
    }
  });
  it('answers pipelined requests in order: every request ahead of a refusal gets its own response first', async () => {
    const key = `Authorization: Bearer ${TEST_KEYS.enterprise}`;
    const pet = '{"name":"piped","categoryId":1}';
    const served = fc.constantFrom(
      { bytes: `GET /v1/pets?limit=2 HTTP/1.1\r\nHost: fuzz\r\n${key}\r\n\r\n`, status: 200 },
      { bytes: 'GET /v1/openapi.json HTTP/1.1\r\nHost: fuzz\r\n\r\n', status: 200 },
      { bytes: `POST /v1/pets HTTP/1.1\r\nHost: fuzz\r\n${key}\r\nContent-Type: application/json\r\nContent-Length: ${pet.length}\r\n\r\n${pet}`, status: 201 },
      { bytes: `POST /v1/pets HTTP/1.1\r\nHost: fuzz\r\n${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${pet.length.toString(16)}\r\n${pet}\r\n0\r\n\r\n`, status: 201 },
      { bytes: `GET /v1/pets?limit=0 HTTP/1.1\r\nHost: fuzz\r\n${key}\r\n\r\n`, status: 400 },
      { bytes: `GET /v1/no-such-path HTTP/1.1\r\nHost: fuzz\r\n${key}\r\n\r\n`, status: 404 },
    );
    const refusal = fc.oneof(
      fc.constantFrom(
        { bytes: 'BLAH\r\n\r\n', status: 400 },
        { bytes: `GET /v1/pets HTTP/1.1\r\nHost: fuzz\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, status: 431 },
        { bytes: 'CONNECT fuzz:443 HTTP/1.1\r\nHost: fuzz:443\r\n\r\n', status: 501 },
        { bytes: 'GET /v1/pets HTTP/2.0\r\nHost: fuzz\r\n\r\n', status: 505 },
        { bytes: 'GET /v1/pets HTTP/1.2\r\nHost: fuzz\r\n\r\n', status: 505 },
        { bytes: 'GET /v1/pets HTTP/1.1\r\n\r\n', status: 400 },
        { bytes: 'GET /v1/pets HTTP/1.1\r\nHost: a@b\r\n\r\n', status: 400 },
        { bytes: 'POST /v1/pets HTTP/1.1\r\nHost: fuzz\r\nContent-Length: abc\r\n\r\n', status: 400 },
        { bytes: `POST /v1/pets HTTP/1.1\r\nHost: fuzz\r\n${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n`, status: 400 },
        { bytes: `GET /v1/pets HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n\r\n`, status: 401 },
      ),
      fc
        .stringMatching(/^[A-Z]{1,12}$/)
        .filter((verb) => !METHODS.includes(verb))
        .map((verb) => ({ bytes: `${verb} /v1/pets HTTP/1.1\r\nHost: fuzz\r\n\r\n`, status: 501 })),
    );
    const last = { bytes: 'GET /v1/openapi.json HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n\r\n', status: 200 };
    await fc.assert(
      fc.asyncProperty(fc.array(served, { minLength: 1, maxLength: 5 }), fc.option(refusal), async (requests, refused) => {
        const sequence = [...requests, refused ?? last];
        const { replies, rest } = await sendRawPipelined(port, Buffer.from(sequence.map((request) => request.bytes).join(''), 'latin1'));
        expect(replies.map((reply) => reply.status)).to.deep.equal(sequence.map((request) => request.status));
        expect(rest.length, 'bytes after the last whole reply').to.equal(0);
        for (const reply of replies) expect(reply.headers.date).to.be.a('string');
      }),
      { numRuns: 200, seed: FUZZ_SEED },
    );
  });
});

