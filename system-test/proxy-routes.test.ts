import { once } from 'node:events';
import { type ClientRequest, type IncomingHttpHeaders, request as httpRequest } from 'node:http';
import { expect } from 'chai';
import { openApiDocumentFor } from '../gateway/src/http/openapi/proxied-routes';
import { createMetrics, type GatewayMetrics } from '../gateway/src/observability/metrics';
import { parseRoutes, type ProxyRoute } from '../gateway/src/upstream/routes-file';
import { capturedLogs } from './support/captured-logs';
import { startHttpUpstream, type HttpUpstream } from './support/http-upstream';
import { expectWithinContract } from './support/openapi-validator';
import { freePort } from './support/redis-server';
import { startTestStack, TEST_KEYS, type TestStack, type TestStackOptions } from './support/test-stack';

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

const FREE = { authorization: `Bearer ${TEST_KEYS.free}` };
const PRO = { authorization: `Bearer ${TEST_KEYS.pro}` };
const LIMIT = 64 * 1024;

/**
 * Configured prefixes proxied to real HTTP upstreams on loopback ports, through the real gateway
 * (in this process) with a real pet service: what the upstream receives, what the client gets,
 * failures, limits, streaming and aborts. Every response is checked against the served document.
 */
describe('routes proxied to HTTP upstreams', function () {
  this.timeout(20_000);
  let upstream: HttpUpstream;
  let routes: readonly ProxyRoute[];
  let stack: TestStack;
  let stacks: TestStack[];

  async function start(options: TestStackOptions = {}): Promise<TestStack> {
    const started = await startTestStack({ routes, ...options });
    stacks.push(started);
    return started;
  }

  /** Sends a request with any headers (fetch refuses hop-by-hop ones) and checks the reply against the contract. */
  function send(
    path: string,
    options: { method?: string; headers?: Record<string, string>; body?: string | Buffer; on?: TestStack } = {},
  ): Promise<Reply> {
    const target = options.on ?? stack;
    return new Promise((resolve, reject) => {
      const request = httpRequest(`${target.baseUrl}${path}`, { method: options.method ?? 'GET', headers: options.headers, agent: false });
      request.on('response', (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => {
          const reply = { status: response.statusCode!, headers: response.headers, text };
          expectWithinContract(options.method ?? 'GET', `${target.baseUrl}${path}`, { ...reply, headers: toHeaders(response.headers) }, openApiDocumentFor(routes));
          resolve(reply);
        });
      });
      request.on('error', reject);
      request.end(options.body);
    });
  }

  /** Opens a request whose body the test writes itself. */
  function open(path: string, method: string, headers: Record<string, string>): { request: ClientRequest; reply: Promise<Reply> } {
    const request = httpRequest(`${stack.baseUrl}${path}`, { method, headers, agent: false });
    const reply = new Promise<Reply>((resolve, reject) => {
      request.on('response', (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, text }));
        response.on('error', reject);
      });
      request.on('error', reject);
    });
    return { request, reply };
  }

  beforeEach(async () => {
    stacks = [];
    upstream = await startHttpUpstream();
    routes = parseRoutes({
      routes: [
        { prefix: '/v1/store/orders', upstream: `${upstream.url}/orders-api`, methods: ['GET', 'POST', 'DELETE'], timeoutMs: 60_000 },
        { prefix: '/v1/store/premium', upstream: upstream.url, methods: ['GET'], timeoutMs: 5000, plans: ['pro', 'enterprise'] },
        { prefix: '/v1/store/uploads', upstream: upstream.url, methods: ['POST', 'PUT'], timeoutMs: 60_000, bodyLimitBytes: LIMIT },
        { prefix: '/v1/store/slow', upstream: upstream.url, methods: ['GET'], timeoutMs: 300 },
        { prefix: '/v1/store/down', upstream: `http://127.0.0.1:${await freePort()}`, methods: ['GET'], timeoutMs: 5000 },
      ],
    });
    stack = await start();
  });

  afterEach(async () => {
    await Promise.all(stacks.map((started) => started.close()));
    await upstream.close();
  });

  it('forwards the request with the caller identity and without its credential or hop-by-hop fields', async () => {
    const reply = await send('/v1/store/orders/42/items?x=1', {
      method: 'POST',
      headers: {
        ...PRO,
        'content-type': 'application/json',
        'x-request-id': 'proxy-test-1',
        connection: 'keep-alive, X-Client-Hop',
        'x-client-hop': 'hop',
        'keep-alive': 'timeout=5',
        te: 'trailers',
        upgrade: 'h2c',
        'proxy-authorization': 'Basic c2VjcmV0',
        'x-api-key-id': 'forged',
        'x-plan': 'enterprise',
        'x-end-to-end': 'kept',
      },
      body: '{"item":1}',
    });
    expect(reply.status).to.equal(200);
    const received = upstream.requests[0]!;
    expect(received.method).to.equal('POST');
    expect(received.url).to.equal('/orders-api/42/items?x=1');
    expect(received.body.toString()).to.equal('{"item":1}');
    expect(received.headers).to.not.have.any.keys('authorization', 'proxy-authorization', 'x-client-hop', 'keep-alive', 'te', 'upgrade');
    expect(received.headers.connection).to.equal('keep-alive');
    expect(received.headers).to.include({
      'x-api-key-id': 'test-pro',
      'x-plan': 'pro',
      'x-request-id': 'proxy-test-1',
      'x-forwarded-for': '127.0.0.1',
      'x-forwarded-proto': 'http',
      'x-forwarded-host': new URL(stack.baseUrl).host,
      host: new URL(upstream.url).host,
      'x-end-to-end': 'kept',
      'content-type': 'application/json',
    });
  });

  it('never forwards Authorization, whatever its scheme or case', async () => {
    for (const authorization of [`Bearer ${TEST_KEYS.pro}`, `bearer ${TEST_KEYS.pro}`, `BEARER  ${TEST_KEYS.pro}`]) {
      const reply = await send('/v1/store/orders', { headers: { authorization } });
      expect(reply.status, authorization).to.equal(200);
    }
    expect(upstream.requests).to.have.length(3);
    for (const received of upstream.requests) {
      expect(received.headers.authorization).to.equal(undefined);
      expect(received.headers['x-api-key-id']).to.equal('test-pro');
    }
  });

  it("relays the upstream's response without its hop-by-hop fields, under the gateway's own headers", async () => {
    upstream.handle((_request, response) => {
      response.writeHead(201, 'Made', {
        'content-type': 'text/plain',
        'x-upstream': 'yes',
        'set-cookie': ['a=1', 'b=2'],
        connection: 'keep-alive, X-Hop',
        'x-hop': 'secret',
        'keep-alive': 'timeout=1',
        'proxy-authenticate': 'Basic realm="upstream"',
        'x-ratelimit-limit': '999999',
        'x-ratelimit-remaining': '999999',
        ratelimit: '"minute";r=999999;t=1',
        'x-request-id': 'chosen-by-upstream',
      });
      response.end('created');
    });
    const reply = await send('/v1/store/orders', { headers: { ...PRO, 'x-request-id': 'proxy-test-2', connection: 'keep-alive' } });
    expect(reply.status).to.equal(201);
    expect(reply.text).to.equal('created');
    expect(reply.headers).to.include({ 'content-type': 'text/plain', 'x-upstream': 'yes', 'x-request-id': 'proxy-test-2' });
    expect(reply.headers['set-cookie']).to.deep.equal(['a=1', 'b=2']);
    expect(reply.headers).to.not.have.any.keys('x-hop', 'proxy-authenticate');
    expect(reply.headers.connection).to.equal('keep-alive');
    expect(reply.headers['keep-alive']).to.not.equal('timeout=1');
    // Pro: 300 a minute, one spent.
    expect(reply.headers).to.include({ 'x-ratelimit-limit': '300', 'x-ratelimit-remaining': '299' });
    expect(reply.headers.ratelimit).to.match(/^"minute";r=299;t=\d+, "day";r=9999;t=\d+$/);
  });

  it('closes the client connection after a proxied response while draining, whatever the upstream says', async () => {
    const draining = await start({ draining: true });
    upstream.handle((_request, response) => {
      response.setHeader('connection', 'keep-alive');
      response.end('ok');
    });
    const reply = await send('/v1/store/orders', { headers: { ...PRO, connection: 'keep-alive' }, on: draining });
    expect(reply.status).to.equal(200);
    expect(reply.headers.connection).to.equal('close');
  });

  it('sets X-Forwarded-For, -Proto and -Host as TRUST_PROXY believes them', async () => {
    const forged = { 'x-forwarded-for': '203.0.113.9', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'shop.example', forwarded: 'for=203.0.113.9', 'x-forwarded-port': '443' };
    await send('/v1/store/orders', { headers: { ...PRO, ...forged } });
    expect(upstream.requests[0]!.headers).to.include({
      'x-forwarded-for': '127.0.0.1',
      'x-forwarded-proto': 'http',
      'x-forwarded-host': new URL(stack.baseUrl).host,
    });
    expect(upstream.requests[0]!.headers).to.not.have.any.keys('forwarded', 'x-forwarded-port');

    const behindProxy = await start({ trustProxy: ['loopback'] });
    await send('/v1/store/orders', { headers: { ...PRO, ...forged, 'x-forwarded-for': '198.51.100.7, 203.0.113.9' }, on: behindProxy });
    // Loopback is trusted, 203.0.113.9 is not: it is the client, and what it claims beyond is dropped.
    expect(upstream.requests[1]!.headers).to.include({
      'x-forwarded-for': '203.0.113.9, 127.0.0.1',
      'x-forwarded-proto': 'https',
      'x-forwarded-host': 'shop.example',
    });
  });

  it("passes the upstream's own errors through unchanged", async () => {
    upstream.handle((request, response) => {
      if (request.url!.endsWith('/missing')) {
        response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"no such order"}');
        return;
      }
      response.writeHead(503, { 'content-type': 'text/html', 'retry-after': '30' }).end('<p>down for maintenance</p>');
    });
    const missing = await send('/v1/store/orders/missing', { headers: PRO });
    expect(missing).to.deep.include({ status: 404, text: '{"error":"no such order"}' });
    expect(missing.headers['content-type']).to.equal('application/json');
    const down = await send('/v1/store/orders/x', { headers: PRO });
    expect(down).to.deep.include({ status: 503, text: '<p>down for maintenance</p>' });
    expect(down.headers).to.include({ 'content-type': 'text/html', 'retry-after': '30' });
  });

  it('answers 502 bad_gateway, with the rate-limit headers, when the upstream refuses the connection', async () => {
    const reply = await send('/v1/store/down/1', { headers: PRO });
    expectError(reply, 502, 'bad_gateway');
    expect(reply.headers['x-ratelimit-remaining']).to.equal('299');
  });

  it('answers 502 when the upstream resets the connection before its response is complete', async () => {
    upstream.handle((_request, response) => {
      response.socket!.end('HTTP/1.1 200 OK\r\nContent-Type: text/pl');
      response.socket!.destroy();
    });
    expectError(await send('/v1/store/orders', { headers: PRO }), 502, 'bad_gateway');
  });

  it("cuts the client's response off when the upstream resets after its response began", async () => {
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-length': '1000' });
      response.write('x'.repeat(10), () => response.socket!.resetAndDestroy());
    });
    const { request, reply } = open('/v1/store/orders', 'GET', PRO);
    request.end();
    let error: unknown;
    try {
      await reply;
    } catch (caught) {
      error = caught;
    }
    expect((error as NodeJS.ErrnoException | undefined)?.code).to.equal('ECONNRESET');
  });

  it('answers 504 gateway_timeout when the upstream stays silent past the route timeout, and abandons its request', async () => {
    upstream.handle(() => undefined);
    const reply = await send('/v1/store/slow', { headers: PRO });
    expectError(reply, 504, 'gateway_timeout');
    expect(reply.headers['x-ratelimit-remaining']).to.equal('299');
    await upstream.requests[0]!.abandoned;
  });

  it('charges one budget per key across the pets routes and the proxied ones', async () => {
    const remaining: number[] = [];
    for (let index = 0; index < 60; index += 1) {
      const reply = await send(index % 2 === 0 ? '/v1/pets' : '/v1/store/orders', { headers: FREE });
      expect(reply.status, `request ${index}`).to.equal(200);
      remaining.push(Number(reply.headers['x-ratelimit-remaining']));
    }
    expect(remaining).to.deep.equal(Array.from({ length: 60 }, (_, index) => 59 - index));
    expectError(await send('/v1/store/orders', { headers: FREE }), 429, 'rate_limited');
    expectError(await send('/v1/pets', { headers: FREE }), 429, 'rate_limited');
    expect(upstream.requests).to.have.length(30);
  });

  it("refuses a key whose plan the route does not list with 403 forbidden, before the upstream", async () => {
    expectError(await send('/v1/store/premium', { headers: FREE }), 403, 'forbidden');
    expect(upstream.requests).to.have.length(0);
    expect((await send('/v1/store/premium', { headers: PRO })).status).to.equal(200);
  });

  it('answers 405 with Allow for a method the route does not allow, and HEAD wherever GET is', async () => {
    const reply = await send('/v1/store/premium/1', { method: 'DELETE', headers: PRO });
    expectError(reply, 405, 'method_not_allowed');
    expect(reply.headers.allow).to.equal('GET, HEAD');
    expect((await send('/v1/store/premium/1', { method: 'HEAD', headers: PRO })).status).to.equal(200);
    expect(upstream.requests.map((received) => received.method)).to.deep.equal(['HEAD']);
  });

  it('answers 401 before the upstream for a request without a valid key', async () => {
    expectError(await send('/v1/store/orders', { headers: { authorization: 'Bearer unknown' } }), 401, 'unauthorized');
    expect(upstream.requests).to.have.length(0);
  });

  it('streams a body to the upstream as it arrives, before the client has sent it all', async () => {
    const { request, reply } = open('/v1/store/uploads/a', 'POST', { ...PRO, 'transfer-encoding': 'chunked' });
    request.write(Buffer.alloc(16 * 1024, 1));
    const received = await upstream.nextRequest();
    await received.receivedAtLeast(16 * 1024);
    request.end(Buffer.alloc(16 * 1024, 2));
    expect((await reply).status).to.equal(200);
    expect(received.bytes).to.equal(32 * 1024);
  });

  it('stops a chunked body over the route limit at the limit: 413 and the upstream request abandoned', async () => {
    const { request, reply } = open('/v1/store/uploads/a', 'POST', { ...PRO, 'transfer-encoding': 'chunked' });
    request.write(Buffer.alloc(48 * 1024, 1));
    const received = await upstream.nextRequest();
    await received.receivedAtLeast(48 * 1024);
    request.write(Buffer.alloc(32 * 1024, 2));
    const answer = await reply;
    expect(answer.status).to.equal(413);
    expect(JSON.parse(answer.text)).to.include({ code: 'payload_too_large' });
    expect(answer.headers['x-ratelimit-remaining']).to.equal('299');
    await received.abandoned;
    expect(received.bytes).to.be.at.most(LIMIT);
    request.destroy();
  });

  it('refuses a declared body over the route limit with 413 without contacting the upstream', async () => {
    const reply = await send('/v1/store/uploads/a', { method: 'PUT', headers: PRO, body: Buffer.alloc(LIMIT + 1) });
    expectError(reply, 413, 'payload_too_large');
    expect(upstream.requests).to.have.length(0);
    expect((await send('/v1/store/uploads/a', { method: 'PUT', headers: PRO, body: Buffer.alloc(LIMIT) })).status).to.equal(200);
  });

  it('refuses a chunked body on DELETE, which http-proxy would send after a Content-Length: 0 head', async () => {
    const { request, reply } = open('/v1/store/orders/1', 'DELETE', { ...PRO, 'transfer-encoding': 'chunked' });
    request.end('GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n');
    expect((await reply).status).to.equal(400);
    expect(upstream.requests).to.have.length(0);
  });

  it('aborts the upstream request when the client leaves while waiting for the response', async () => {
    upstream.handle(() => undefined);
    const { request, reply } = open('/v1/store/orders', 'GET', PRO);
    reply.catch(() => undefined);
    request.end();
    const received = await upstream.nextRequest();
    request.destroy();
    await received.abandoned;
  });

  it('aborts the upstream request when the client leaves in the middle of its upload', async () => {
    upstream.handle(() => undefined);
    const { request, reply } = open('/v1/store/uploads/a', 'POST', { ...PRO, 'transfer-encoding': 'chunked' });
    reply.catch(() => undefined);
    request.write(Buffer.alloc(1024));
    const received = await upstream.nextRequest();
    await received.receivedAtLeast(1024);
    request.destroy();
    await received.abandoned;
  });

  it('aborts the upstream response when the client leaves in the middle of the download', async () => {
    upstream.handle((_request, response) => {
      response.writeHead(200);
      response.write(Buffer.alloc(64 * 1024));
    });
    const request = httpRequest(`${stack.baseUrl}/v1/store/orders`, { headers: PRO, agent: false });
    request.on('error', () => undefined);
    request.end();
    const [response] = (await once(request, 'response')) as [NodeJS.ReadableStream];
    await once(response, 'data');
    request.destroy();
    await upstream.requests[0]!.abandoned;
  });

  it('labels logs and metrics with the configured prefix, never the raw path', async () => {
    const { logger, lines } = capturedLogs();
    const metrics: GatewayMetrics = createMetrics();
    const observed = await start({ logger, metrics });
    await send('/v1/store/orders/8472/items', { headers: { ...PRO, 'x-request-id': 'proxy-label-1' }, on: observed });
    await send('/v1/store/down/9', { headers: PRO, on: observed });
    const text = await metrics.registry.metrics();
    expect(text).to.include('http_requests_total{route="/v1/store/orders",method="GET",status="200"} 1');
    expect(text).to.include('http_requests_total{route="/v1/store/down",method="GET",status="502"} 1');
    expect(text).to.not.include('8472');
    const line = lines.find((entry) => entry.requestId === 'proxy-label-1');
    expect(line).to.include({ msg: 'request', route: '/v1/store/orders', status: 200, keyId: 'test-pro' });
    expect(lines.find((entry) => entry.msg === 'request failed')).to.include({ route: '/v1/store/down', status: 502 });
  });

  it("applies the gateway's CORS policy to proxied prefixes: preflights answered at the edge, the upstream's CORS headers dropped", async () => {
    const app = 'https://app.example.com';
    const withCors = await start({ corsOrigins: [app] });
    upstream.handle((request, response) => {
      request.resume();
      request.on('end', () => {
        response.writeHead(200, { 'Access-Control-Allow-Origin': '*', 'Access-Control-Allow-Credentials': 'true', Vary: 'Accept-Encoding', 'X-Upstream': 'yes' });
        response.end('ok');
      });
    });

    const preflight = await fetch(`${withCors.baseUrl}/v1/store/uploads/1`, { method: 'OPTIONS', headers: { Origin: app, 'Access-Control-Request-Method': 'PUT' } });
    expect(preflight.status).to.equal(204);
    expect(preflight.headers.get('access-control-allow-origin')).to.equal(app);
    expect(preflight.headers.get('access-control-allow-methods'), "the pets API's methods and every route's").to.equal('GET, HEAD, POST, PATCH, DELETE, PUT');
    expect(upstream.requests, 'a preflight never reaches the upstream').to.have.length(0);

    const allowed = await send('/v1/store/orders/1', { headers: { ...PRO, origin: app }, on: withCors });
    expect(allowed.status).to.equal(200);
    expect(allowed.headers['access-control-allow-origin']).to.equal(app);
    expect(allowed.headers['access-control-expose-headers']).to.include('X-RateLimit-Remaining');
    expect(allowed.headers['access-control-allow-credentials']).to.equal(undefined);
    expect(allowed.headers.vary, "the upstream's reasons to vary are kept").to.equal('Origin, Accept-Encoding');
    expect(allowed.headers['x-upstream']).to.equal('yes');
    const other = await send('/v1/store/orders/1', { headers: { ...PRO, origin: 'https://evil.example.com' }, on: withCors });
    expect(other.status).to.equal(200);
    expect(other.headers['access-control-allow-origin'], "not the upstream's either").to.equal(undefined);
    expect(other.headers.vary).to.equal('Origin, Accept-Encoding');

    const unconfigured = await send('/v1/store/orders/1', { headers: { ...PRO, origin: app } });
    expect(unconfigured.headers['access-control-allow-origin'], 'without CORS_ORIGINS the upstream answers for itself').to.equal('*');
    expect(unconfigured.headers.vary).to.equal('Accept-Encoding');
  });

  it('serves the configured routes in the OpenAPI document, and without routes answers 404 as before', async () => {
    const document = JSON.parse((await send('/v1/openapi.json')).text) as { paths: Record<string, Record<string, unknown>> };
    expect(document.paths).to.include.keys('/pets', '/pets/{petId}', '/store/orders', '/store/orders/{rest}');
    expect(document.paths['/store/orders']).to.include.keys('get', 'post', 'delete');
    expect(document.paths['/store/premium']!.get).to.have.nested.property('responses.403');
    expect(document.paths['/store/uploads/{rest}']!.put).to.have.nested.property('responses.413');

    routes = [];
    const plain = await start();
    expectError(await send('/v1/store/orders', { headers: PRO, on: plain }), 404, 'not_found');
    const served = JSON.parse((await send('/v1/openapi.json', { on: plain })).text) as { paths: object };
    expect(served.paths).to.have.all.keys('/pets', '/pets/{petId}');
  });
});

function expectError(reply: Reply, status: number, code: string): void {
  expect(reply.status, reply.text).to.equal(status);
  expect(JSON.parse(reply.text)).to.deep.equal({ code, message: (JSON.parse(reply.text) as { message: string }).message, status });
}

function toHeaders(headers: IncomingHttpHeaders): Headers {
  const result = new Headers();
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) result.append(name, item);
  }
  return result;
}
