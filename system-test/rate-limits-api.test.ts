import { connect } from 'node:net';
import { expect } from 'chai';
import { SUNSET_AT } from '../gateway/src/http/deprecation';
import { expectWithinContract, type ReceivedResponse } from './support/openapi-validator';
import { type RateLimitStack, secretOf, startRateLimitStack } from './support/rate-limit-stack';

const MINUTE_START = Date.UTC(2030, 0, 1, 12, 0);
const NEXT_DAY = Date.UTC(2030, 0, 2);
const SETTINGS = { unauthenticatedPerMinute: 5, ban: { threshold: 3, seconds: 900 } };
const KEYS = [
  { id: 'free', plan: 'free' },
  { id: 'override', plan: 'free', limits: { perMinute: 2 } },
  { id: 'daily', plan: 'enterprise', limits: { perMinute: 100, perDay: 3 } },
  { id: 'banme', plan: 'enterprise', limits: { perMinute: 1, perDay: 100 } },
  { id: 'roomy', plan: 'enterprise', limits: { perMinute: 10_000, perDay: 1_000_000 } },
] as const;

/** The rate-limit fields every /v1 response must carry, checked to be integers. */
function expectRateLimitHeaders(response: Response, what: string): { limit: number; remaining: number; reset: number } {
  const read = (name: string): number => {
    const value = response.headers.get(name);
    expect(value, `${what}: ${name}`).to.match(/^[0-9]+$/);
    return Number(value);
  };
  expect(response.headers.get('ratelimit-policy'), `${what}: RateLimit-Policy`).to.match(/^"[a-z-]+";q=\d+;w=\d+/);
  expect(response.headers.get('ratelimit'), `${what}: RateLimit`).to.match(/^"[a-z-]+";r=\d+;t=\d+/);
  return { limit: read('x-ratelimit-limit'), remaining: read('x-ratelimit-remaining'), reset: read('x-ratelimit-reset') };
}

async function errorCode(response: Response): Promise<string> {
  return ((await response.json()) as { code: string }).code;
}

/**
 * Sends `GET <target>` as written, which fetch cannot (it always sends the origin form), and
 * reads the reply until the server closes.
 */
function rawGet(baseUrl: string, target: string, secret?: string): Promise<ReceivedResponse> {
  const { port } = new URL(baseUrl);
  const lines = [`GET ${target} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close'];
  if (secret !== undefined) lines.push(`Authorization: Bearer ${secret}`);
  return new Promise((resolve, reject) => {
    let reply = '';
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(`${lines.join('\r\n')}\r\n\r\n`));
    socket.on('data', (chunk: Buffer) => (reply += chunk.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', text = ''] = reply.split('\r\n\r\n');
      const [statusLine = '', ...fields] = head.split('\r\n');
      const headers = new Headers(fields.map((field) => [field.slice(0, field.indexOf(':')), field.slice(field.indexOf(':') + 1).trim()]));
      resolve({ status: Number(statusLine.split(' ')[1]), headers, text });
    });
  });
}

describe('rate limits over HTTP (in-memory store)', () => {
  let stack: RateLimitStack;

  beforeEach(async () => {
    stack = await startRateLimitStack({ keys: KEYS, rateLimits: SETTINGS, startAt: MINUTE_START + 18_000 });
  });
  afterEach(() => stack.close());

  it('puts the headers on every status a /v1 request can get', async () => {
    const json = { 'Content-Type': 'application/json' };
    const cases: [number, () => Promise<Response>][] = [
      [200, () => stack.request('/v1/pets', 'roomy')],
      [201, () => stack.request('/v1/pets', 'roomy', { method: 'POST', headers: json, body: '{"name":"Rex","categoryId":1}' })],
      [400, () => stack.request('/v1/pets?limit=0', 'roomy')],
      [401, () => stack.request('/v1/pets')],
      [401, () => stack.request('/v1/pets', 'no-such-key')],
      [404, () => stack.request('/v1/pets/999', 'roomy')],
      [404, () => stack.request('/v1/no-such-path', 'roomy')],
      [405, () => stack.request('/v1/pets', 'roomy', { method: 'PUT' })],
      [413, () => stack.request('/v1/pets', 'roomy', { method: 'POST', headers: json, body: `"${'x'.repeat(70_000)}"` })],
      [415, () => stack.request('/v1/pets', 'roomy', { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: 'x' })],
    ];
    for (const [status, send] of cases) {
      const response = await send();
      expect(response.status).to.equal(status);
      expectRateLimitHeaders(response, String(status));
    }

    stack.setNow(SUNSET_AT);
    const gone = await stack.request('/v1/pets/1', 'roomy');
    expect(gone.status).to.equal(410);
    expectRateLimitHeaders(gone, '410');

    await stack.request('/v1/pets', 'override');
    await stack.request('/v1/pets', 'override');
    const limited = await stack.request('/v1/pets', 'override');
    expect(limited.status).to.equal(429);
    expectRateLimitHeaders(limited, '429');

    await stack.petService.shutdown();
    const unavailable = await stack.request('/v1/pets', 'roomy');
    expect(unavailable.status).to.be.within(500, 599);
    expectRateLimitHeaders(unavailable, '5xx');
  });

  it('gives a free key 60 a minute with exact header values, then 429 rate_limited with Retry-After', async () => {
    const first = await stack.request('/v1/pets', 'free');
    expect(first.status).to.equal(200);
    expect(expectRateLimitHeaders(first, 'first')).to.deep.equal({ limit: 60, remaining: 59, reset: (MINUTE_START + 60_000) / 1000 });
    expect(first.headers.get('ratelimit-policy')).to.equal('"minute";q=60;w=60, "day";q=1000;w=86400');
    expect(first.headers.get('ratelimit')).to.equal(`"minute";r=59;t=42, "day";r=999;t=${(NEXT_DAY - MINUTE_START - 18_000) / 1000}`);
    expect(first.headers.get('retry-after')).to.equal(null);

    for (let i = 2; i <= 60; i += 1) expect((await stack.request('/v1/pets', 'free')).status, `request ${i}`).to.equal(200);
    stack.setNow(MINUTE_START + 50_500);
    const limited = await stack.request('/v1/pets', 'free');
    expect(limited.status).to.equal(429);
    expect(await errorCode(limited)).to.equal('rate_limited');
    expect(limited.headers.get('retry-after')).to.equal('10');
    expect(expectRateLimitHeaders(limited, '429')).to.deep.equal({ limit: 60, remaining: 0, reset: (MINUTE_START + 60_000) / 1000 });

    stack.setNow(MINUTE_START + 60_000);
    const nextMinute = await stack.request('/v1/pets', 'free');
    expect(nextMinute.status).to.equal(200);
    expect(expectRateLimitHeaders(nextMinute, 'next minute').remaining).to.equal(59);
    expect(nextMinute.headers.get('ratelimit')).to.match(/^"minute";r=59;t=60, "day";r=939;t=\d+$/);
  });

  it('applies a keys-file override of the plan numbers', async () => {
    const first = await stack.request('/v1/pets', 'override');
    expect(first.headers.get('ratelimit-policy')).to.equal('"minute";q=2;w=60, "day";q=1000;w=86400');
    expect((await stack.request('/v1/pets', 'override')).status).to.equal(200);
    expect((await stack.request('/v1/pets', 'override')).status).to.equal(429);
  });

  it('blocks on the day window with Retry-After until UTC midnight, and resets at midnight', async () => {
    for (let i = 0; i < 3; i += 1) expect((await stack.request('/v1/pets', 'daily')).status).to.equal(200);
    stack.setNow(NEXT_DAY - 3_600_000 - 400);
    const limited = await stack.request('/v1/pets', 'daily');
    expect(limited.status).to.equal(429);
    expect(limited.headers.get('retry-after')).to.equal('3601');
    expect(expectRateLimitHeaders(limited, 'day 429')).to.deep.equal({ limit: 3, remaining: 0, reset: NEXT_DAY / 1000 });
    stack.setNow(NEXT_DAY);
    expect((await stack.request('/v1/pets', 'daily')).status).to.equal(200);
  });

  it('limits requests without a valid key per client IP before authentication', async () => {
    for (let i = 1; i <= 5; i += 1) {
      const response = await stack.request('/v1/pets', i % 2 === 0 ? 'guessed-key' : undefined);
      expect(response.status).to.equal(401);
      expect(response.headers.get('ratelimit-policy')).to.equal('"ip-minute";q=5;w=60');
      expect(expectRateLimitHeaders(response, `401 #${i}`).remaining).to.equal(5 - i);
    }
    const throttled = await stack.request('/v1/pets', 'guessed-key');
    expect(throttled.status).to.equal(429);
    expect(await errorCode(throttled)).to.equal('rate_limited');
    expect(throttled.headers.get('retry-after')).to.equal('42');
    expect((await stack.request('/v1/pets', 'free')).status, 'a valid key has its own bucket').to.equal(200);
  });

  it('ignores X-Forwarded-For unless TRUST_PROXY says so', async () => {
    for (let i = 0; i < 6; i += 1) await stack.request('/v1/pets', undefined, { headers: { 'X-Forwarded-For': `203.0.113.${i}` } });
    const spoofed = await stack.request('/v1/pets', undefined, { headers: { 'X-Forwarded-For': '203.0.113.99' } });
    expect(spoofed.status, 'a client cannot escape its bucket by forging the header').to.equal(429);
  });

  it('bans a key that keeps sending while limited, with api_key_banned, until an admin lifts it', async () => {
    expect((await stack.request('/v1/pets', 'banme')).status).to.equal(200);
    for (let i = 0; i < 3; i += 1) {
      const limited = await stack.request('/v1/pets', 'banme');
      expect(await errorCode(limited)).to.equal('rate_limited');
    }
    const banned = await stack.request('/v1/pets', 'banme');
    expect(banned.status).to.equal(429);
    expect(await errorCode(banned)).to.equal('api_key_banned');
    expect(banned.headers.get('retry-after')).to.equal('900');
    expect(banned.headers.get('x-ratelimit-remaining')).to.equal('0');
    expect(banned.headers.get('ratelimit'), 'the ban, not the minute window').to.equal('"ban";r=0;t=900');
    expect(banned.headers.get('ratelimit-policy')).to.match(/^"minute";q=\d+;w=60, "day";q=\d+;w=86400, "ban";q=0;w=900$/);

    stack.setNow(MINUTE_START + 18_000 + 100_250);
    const stillBanned = await stack.request('/v1/pets', 'banme');
    expect(await errorCode(stillBanned)).to.equal('api_key_banned');
    expect(stillBanned.headers.get('retry-after'), 'the remaining ban time, rounded up').to.equal('800');

    const lift = await fetch(`${stack.adminUrl}/admin/bans/banme`, { method: 'DELETE' });
    expect(lift.status).to.equal(204);
    expect((await stack.request('/v1/pets', 'banme')).status).to.equal(200);
    const again = await fetch(`${stack.adminUrl}/admin/bans/banme`, { method: 'DELETE' });
    expect(again.status).to.equal(404);
    expect(await errorCode(again)).to.equal('not_found');
  });

  it('does not limit reading the OpenAPI document', async () => {
    for (let i = 0; i < 8; i += 1) {
      const response = await stack.request('/v1/openapi.json', undefined, { method: i % 2 === 0 ? 'GET' : 'HEAD' });
      expect(response.status).to.equal(200);
      expect(response.headers.get('x-ratelimit-limit')).to.equal(null);
    }
  });

  it('answers other methods on the OpenAPI document with 405 and Allow, charged like any /v1 request', async () => {
    const keyed = await stack.request('/v1/openapi.json', 'roomy', { method: 'POST' });
    expect(keyed.status).to.equal(405);
    expect(keyed.headers.get('allow')).to.equal('GET, HEAD');
    expect(await errorCode(keyed)).to.equal('method_not_allowed');
    expect(expectRateLimitHeaders(keyed, 'keyed 405')).to.include({ limit: 10_000, remaining: 9_999 });

    for (let i = 1; i <= 5; i += 1) {
      const anonymous = await stack.request('/v1/openapi.json', undefined, { method: 'DELETE' });
      expect(anonymous.status).to.equal(405);
      expect(expectRateLimitHeaders(anonymous, `anonymous 405 #${i}`).remaining).to.equal(5 - i);
    }
    expect((await stack.request('/v1/openapi.json', undefined, { method: 'PUT' })).status).to.equal(429);
  });

  it('charges absolute-form and fragment request targets as express routes them', async () => {
    const { host } = new URL(stack.baseUrl);
    for (const target of [`http://${host}/v1/pets`, `http://${host}/V1/pets?limit=1`, '/v1/pets#x']) {
      const keyed = await rawGet(stack.baseUrl, target, secretOf('roomy'));
      expectWithinContract('GET', `${stack.baseUrl}/v1/pets`, keyed);
      expect(keyed.status, target).to.equal(200);
      expect(keyed.headers.get('x-ratelimit-limit'), target).to.equal('10000');
    }
    const anonymous = await rawGet(stack.baseUrl, `http://${host}/v1/pets`);
    expectWithinContract('GET', `${stack.baseUrl}/v1/pets`, anonymous);
    expect(anonymous.status).to.equal(401);
    expect(anonymous.headers.get('ratelimit-policy')).to.equal('"ip-minute";q=5;w=60');

    const bare = await rawGet(stack.baseUrl, '/v1#x', secretOf('roomy'));
    expectWithinContract('GET', `${stack.baseUrl}/v1`, bare);
    expect(bare.status, 'the key is known, so /v1 is only an unknown path').to.equal(404);
    expect(bare.headers.get('x-ratelimit-limit')).to.equal('10000');
  });

  it('keeps the admin endpoints off the public listener', async () => {
    const response = await fetch(`${stack.baseUrl}/admin/bans/banme`, { method: 'DELETE' });
    expect(response.status).to.equal(404);
  });
});

describe('rate limits behind a trusted proxy', () => {
  let stack: RateLimitStack;

  before(async () => {
    stack = await startRateLimitStack({ keys: KEYS, rateLimits: SETTINGS, trustProxy: ['loopback'] });
  });
  after(() => stack.close());

  it('buckets unauthenticated requests by the X-Forwarded-For client address', async () => {
    const from = (ip: string) => stack.request('/v1/pets', undefined, { headers: { 'X-Forwarded-For': `${ip}, 127.0.0.1` } });
    for (let i = 0; i < 5; i += 1) expect((await from('198.51.100.7')).status).to.equal(401);
    expect((await from('198.51.100.7')).status).to.equal(429);
    const other = await from('198.51.100.8');
    expect(other.status).to.equal(401);
    expect(other.headers.get('x-ratelimit-remaining')).to.equal('4');
  });
});

describe('rate limits behind TRUST_PROXY=true', () => {
  let stack: RateLimitStack;

  before(async () => {
    stack = await startRateLimitStack({ keys: KEYS, rateLimits: SETTINGS, trustProxy: true });
  });
  after(() => stack.close());

  it('charges a forwarded value that is no IP address to the socket address', async () => {
    const from = (forwarded?: string) =>
      stack.request('/v1/pets', undefined, { headers: forwarded === undefined ? {} : { 'X-Forwarded-For': forwarded } });
    for (let i = 0; i < 5; i += 1) expect((await from()).status).to.equal(401);
    const statuses = [];
    for (const forwarded of ['unknown', 'not-an-address-1', '203.0.113.5:443']) statuses.push((await from(forwarded)).status);
    console.log(`      after 5 from 127.0.0.1, made-up forwarded values: ${statuses.join(', ')}`);
    expect(statuses).to.deep.equal([429, 429, 429]);
    expect((await from('198.51.100.9')).status, 'a real address still has its own bucket').to.equal(401);
  });
});
