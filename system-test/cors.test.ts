import { expect } from 'chai';
import { CORS_EXPOSED_HEADERS } from '../gateway/src/edge/cors-policy';
import { SUNSET_AT } from '../gateway/src/http/deprecation';
import { type RateLimitStack, secretOf, startRateLimitStack } from './support/rate-limit-stack';

const ALLOWED = 'https://app.example.com';
const OTHER = 'https://evil.example.com';
const MINUTE_START = Date.UTC(2030, 0, 1, 12, 0);
const SETTINGS = { unauthenticatedPerMinute: 5, ban: { threshold: 1, seconds: 900 } };
const KEYS = [
  { id: 'override', plan: 'free', limits: { perMinute: 1 } },
  { id: 'banme', plan: 'enterprise', limits: { perMinute: 1, perDay: 100 } },
  { id: 'roomy', plan: 'enterprise', limits: { perMinute: 10_000, perDay: 1_000_000 } },
] as const;
const CORS_HEADERS = ['access-control-allow-origin', 'access-control-expose-headers', 'access-control-allow-methods', 'access-control-allow-headers', 'access-control-max-age'];

/** A preflight as a browser sends it: no credential, the method and headers the page will use. */
function preflight(stack: RateLimitStack, path: string, origin: string, extra: Record<string, string> = {}): Promise<Response> {
  return fetch(`${stack.baseUrl}${path}`, {
    method: 'OPTIONS',
    headers: { Origin: origin, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization,content-type', ...extra },
  });
}

function request(stack: RateLimitStack, path: string, origin: string | undefined, keyId?: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  if (origin !== undefined) headers.set('Origin', origin);
  if (keyId !== undefined) headers.set('Authorization', `Bearer ${secretOf(keyId)}`);
  return fetch(`${stack.baseUrl}${path}`, { ...init, headers });
}

async function errorCode(response: Response): Promise<string> {
  return ((await response.json()) as { code: string }).code;
}

function expectNoCorsHeaders(response: Response, what: string): void {
  for (const name of CORS_HEADERS) expect(response.headers.get(name), `${what}: ${name}`).to.equal(null);
}

function expectCorsHeaders(response: Response, what: string, origin = ALLOWED): void {
  expect(response.headers.get('access-control-allow-origin'), `${what}: Access-Control-Allow-Origin`).to.equal(origin);
  expect(response.headers.get('access-control-expose-headers'), `${what}: Access-Control-Expose-Headers`).to.equal(CORS_EXPOSED_HEADERS.join(', '));
  expect(response.headers.get('access-control-allow-credentials'), `${what}: no credentials`).to.equal(null);
}

describe('CORS (CORS_ORIGINS)', () => {
  let stack: RateLimitStack;
  const stacks: RateLimitStack[] = [];

  async function start(corsOrigins?: '*' | readonly string[]): Promise<RateLimitStack> {
    const started = await startRateLimitStack({ keys: KEYS, rateLimits: SETTINGS, startAt: MINUTE_START + 18_000, corsOrigins });
    stacks.push(started);
    return started;
  }

  beforeEach(async () => {
    stack = await start([ALLOWED, 'http://127.0.0.1:5173']);
  });
  afterEach(async () => {
    await Promise.all(stacks.splice(0).map((started) => started.close()));
  });

  it('answers a preflight from an allowed origin with 204, the methods, headers and max age, and needs no key', async () => {
    for (const path of ['/v1/pets', '/v1/pets/123', '/v1/pets?limit=5']) {
      const response = await preflight(stack, path, ALLOWED, { 'Access-Control-Request-Headers': 'authorization,content-type,idempotency-key,x-request-id' });
      expect(response.status, path).to.equal(204);
      expect(await response.text()).to.equal('');
      expect(response.headers.get('access-control-allow-origin')).to.equal(ALLOWED);
      expect(response.headers.get('access-control-allow-methods')).to.equal('GET, HEAD, POST, PATCH, DELETE');
      expect(response.headers.get('access-control-allow-headers')).to.equal('Authorization, Content-Type, Idempotency-Key, If-Match, If-None-Match, X-Request-Id');
      expect(response.headers.get('access-control-max-age')).to.equal('7200');
      expect(response.headers.get('vary')).to.equal('Origin');
      expect(response.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
    }
    const second = await preflight(stack, '/v1/pets', 'http://127.0.0.1:5173');
    expect(second.status).to.equal(204);
    expect(second.headers.get('access-control-allow-origin'), 'the origin that asked, not the list').to.equal('http://127.0.0.1:5173');
  });

  it('charges preflights to the client IP like requests without a key, and refuses the excess with 429 and CORS headers', async () => {
    for (let i = 1; i <= 5; i += 1) {
      const response = await preflight(stack, '/v1/pets', ALLOWED);
      expect(response.status, `preflight ${i}`).to.equal(204);
      expect(response.headers.get('ratelimit-policy')).to.equal('"ip-minute";q=5;w=60');
      expect(response.headers.get('x-ratelimit-remaining')).to.equal(String(5 - i));
    }
    const flood = await preflight(stack, '/v1/pets', ALLOWED);
    expect(flood.status).to.equal(429);
    expect(await errorCode(flood)).to.equal('rate_limited');
    expect(flood.headers.get('retry-after')).to.equal('42');
    expectCorsHeaders(flood, 'refused preflight');

    // The same bucket as any request without a valid key; a key on a preflight does not escape it.
    const anonymous = await request(stack, '/v1/pets', ALLOWED);
    expect(anonymous.status).to.equal(429);
    expect((await preflight(stack, '/v1/pets', ALLOWED, { Authorization: `Bearer ${secretOf('roomy')}` })).status).to.equal(429);
    const keyed = await request(stack, '/v1/pets', ALLOWED, 'roomy');
    expect(keyed.status, 'a valid key has its own bucket').to.equal(200);

    stack.setNow(MINUTE_START + 60_000);
    expect((await preflight(stack, '/v1/pets', ALLOWED)).status, 'next minute').to.equal(204);
  });

  it('gives a preflight from another origin no CORS headers: it stays an ordinary OPTIONS, charged alike', async () => {
    const anonymous = await preflight(stack, '/v1/pets', OTHER);
    expect(anonymous.status).to.equal(401);
    expect(await errorCode(anonymous)).to.equal('unauthorized');
    expectNoCorsHeaders(anonymous, 'anonymous');
    expect(anonymous.headers.get('vary')).to.equal('Origin');
    expect(anonymous.headers.get('x-ratelimit-remaining')).to.equal('4');

    const keyed = await preflight(stack, '/v1/pets', OTHER, { Authorization: `Bearer ${secretOf('roomy')}` });
    expect(keyed.status).to.equal(405);
    expect(keyed.headers.get('allow')).to.equal('GET, HEAD, POST');
    expectNoCorsHeaders(keyed, 'keyed');

    for (const origin of ['https://app.example.com.evil.example', 'https://APP.example.com', 'http://app.example.com', 'null', `${ALLOWED}/`]) {
      expectNoCorsHeaders(await preflight(stack, '/v1/pets', origin, { Authorization: `Bearer ${secretOf('roomy')}` }), origin);
    }
  });

  it('treats an OPTIONS without Access-Control-Request-Method as an ordinary request, with CORS headers', async () => {
    const response = await request(stack, '/v1/pets', ALLOWED, 'roomy', { method: 'OPTIONS' });
    expect(response.status).to.equal(405);
    expect(await errorCode(response)).to.equal('method_not_allowed');
    expectCorsHeaders(response, 'OPTIONS');
    expect(response.headers.get('access-control-allow-methods')).to.equal(null);
  });

  it('puts Access-Control-Allow-Origin, Expose-Headers and Vary: Origin on every status an allowed origin can get', async () => {
    const json = { 'Content-Type': 'application/json' };
    const cases: Array<[number, string, () => Promise<Response>]> = [
      [200, 'list', () => request(stack, '/v1/pets', ALLOWED, 'roomy')],
      [201, 'create', () => request(stack, '/v1/pets', ALLOWED, 'roomy', { method: 'POST', headers: json, body: '{"name":"Rex","categoryId":1}' })],
      [200, 'OpenAPI document (not charged)', () => request(stack, '/v1/openapi.json', ALLOWED)],
      [200, 'HEAD', () => request(stack, '/v1/pets', ALLOWED, 'roomy', { method: 'HEAD' })],
      [400, 'bad query', () => request(stack, '/v1/pets?limit=0', ALLOWED, 'roomy')],
      [400, 'bad JSON (error handler)', () => request(stack, '/v1/pets', ALLOWED, 'roomy', { method: 'POST', headers: json, body: '{' })],
      [401, 'no key', () => request(stack, '/v1/pets', ALLOWED)],
      [401, 'unknown key', () => request(stack, '/v1/pets', ALLOWED, 'no-such-key')],
      [404, 'no such pet', () => request(stack, '/v1/pets/999', ALLOWED, 'roomy')],
      [404, 'no such path', () => request(stack, '/v1/no-such-path', ALLOWED, 'roomy')],
      [404, 'outside /v1', () => request(stack, '/', ALLOWED)],
      [405, 'PUT', () => request(stack, '/v1/pets', ALLOWED, 'roomy', { method: 'PUT' })],
      [413, 'large body', () => request(stack, '/v1/pets', ALLOWED, 'roomy', { method: 'POST', headers: json, body: `"${'x'.repeat(70_000)}"` })],
      [415, 'text body', () => request(stack, '/v1/pets', ALLOWED, 'roomy', { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: 'x' })],
      [200, 'override, first', () => request(stack, '/v1/pets', ALLOWED, 'override')],
      [429, 'rate_limited', () => request(stack, '/v1/pets', ALLOWED, 'override')],
      [200, 'banme, first', () => request(stack, '/v1/pets', ALLOWED, 'banme')],
      [429, 'rate_limited before the ban', () => request(stack, '/v1/pets', ALLOWED, 'banme')],
      [429, 'api_key_banned', () => request(stack, '/v1/pets', ALLOWED, 'banme')],
    ];
    for (const [status, what, send] of cases) {
      const response = await send();
      expect(response.status, what).to.equal(status);
      expectCorsHeaders(response, what);
      expect(response.headers.get('vary'), what).to.equal('Origin');
    }

    stack.setNow(SUNSET_AT);
    const gone = await request(stack, '/v1/pets/1', ALLOWED, 'roomy');
    expect(gone.status).to.equal(410);
    expectCorsHeaders(gone, '410');
    expect(gone.headers.get('sunset')).to.be.a('string');

    await stack.petService.shutdown();
    const unavailable = await request(stack, '/v1/pets', ALLOWED, 'roomy');
    expect(unavailable.status).to.be.within(500, 599);
    expectCorsHeaders(unavailable, '5xx');
  });

  it('answers other origins, and requests without Origin, as before, but says Vary: Origin', async () => {
    for (const origin of [OTHER, undefined]) {
      const response = await request(stack, '/v1/pets', origin, 'roomy');
      expect(response.status).to.equal(200);
      expectNoCorsHeaders(response, String(origin));
      expect(response.headers.get('vary'), String(origin)).to.equal('Origin');
    }
  });

  it('with CORS_ORIGINS=* allows every origin, with the same header on every response and no Vary', async () => {
    const open = await start('*');
    const answered = await preflight(open, '/v1/pets', OTHER);
    expect(answered.status).to.equal(204);
    expect(answered.headers.get('access-control-allow-origin')).to.equal('*');
    expect(answered.headers.get('access-control-allow-headers')).to.equal('Authorization, Content-Type, Idempotency-Key, If-Match, If-None-Match, X-Request-Id');
    for (const origin of [OTHER, 'null', undefined]) {
      const response = await request(open, '/v1/pets', origin, 'roomy');
      expect(response.status).to.equal(200);
      expectCorsHeaders(response, String(origin), '*');
      expect(response.headers.get('vary')).to.equal(null);
    }
  });

  it('without CORS_ORIGINS behaves as before: no CORS headers, and a preflight is 401', async () => {
    const closed = await start();
    const refused = await preflight(closed, '/v1/pets', ALLOWED);
    expect(refused.status).to.equal(401);
    expectNoCorsHeaders(refused, 'preflight');
    const response = await request(closed, '/v1/pets', ALLOWED, 'roomy');
    expect(response.status).to.equal(200);
    expectNoCorsHeaders(response, 'GET');
    expect(response.headers.get('vary')).to.equal(null);
  });
});
