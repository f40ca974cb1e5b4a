import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { type BrowserWithPages, launchChromiumWithPagesOrSkip } from './support/browser';
import { type RateLimitStack, secretOf, startRateLimitStack } from './support/rate-limit-stack';

/** What a page's script could read of a response: null where CORS hid a header from it. */
interface SeenResponse {
  status: number;
  body: unknown;
  headers: Record<string, string | null>;
}

/** The headers the script tries to read; Content-Type is CORS-safelisted, the others exposed. */
const READ = [
  'content-type',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'ratelimit',
  'ratelimit-policy',
  'retry-after',
  'location',
  'x-request-id',
  'idempotent-replayed',
];

/** Runs `fetch(url, init)` in the page; resolves to what its script saw, or rejects as fetch did. */
function fetchInPage(page: Page, url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<SeenResponse> {
  return page.evaluate(
    async ({ url, init, read }) => {
      const response = await fetch(url, init);
      const text = await response.text();
      return {
        status: response.status,
        body: text === '' ? null : (JSON.parse(text) as unknown),
        headers: Object.fromEntries(read.map((name) => [name, response.headers.get(name)])),
      };
    },
    { url, init, read: READ },
  );
}

/** The message fetch rejected with in the page, or undefined if it resolved. */
function fetchErrorInPage(page: Page, url: string, init: { headers?: Record<string, string> } = {}): Promise<string | undefined> {
  return page.evaluate(
    async ({ url, init }) => {
      try {
        await fetch(url, init);
        return undefined;
      } catch (error) {
        return String(error);
      }
    },
    { url, init },
  );
}

/**
 * A real browser on a page of one loopback origin calling the gateway on another: what CORS lets
 * a script do, and what it keeps from a page CORS_ORIGINS does not list.
 */
describe('CORS in a real browser (headless Chromium)', function () {
  this.timeout(60_000);
  let browser: BrowserWithPages;
  let stack: RateLimitStack;
  let page: Page;

  before(async function () {
    browser = await launchChromiumWithPagesOrSkip(this);
    stack = await startRateLimitStack({
      keys: [{ id: 'browser', plan: 'free', limits: { perMinute: 3 } }],
      corsOrigins: [browser.allowedPage.origin],
      startAt: Date.UTC(2030, 0, 1, 12, 0, 18),
    });
  });

  after(async () => {
    await Promise.all([browser?.close(), stack?.close()]);
  });

  beforeEach(async () => {
    page = await browser.newPage();
  });
  afterEach(async () => {
    await page.close();
  });

  it('lets a page from an allowed origin list, create and hit its rate limit, reading every header it needs', async () => {
    await page.goto(browser.allowedPage.url);
    expect(new URL(page.url()).origin).to.not.equal(new URL(stack.baseUrl).origin);
    const authorization = `Bearer ${secretOf('browser')}`;

    const listed = await fetchInPage(page, `${stack.baseUrl}/v1/pets?limit=10`, { headers: { Authorization: authorization } });
    expect(listed.status).to.equal(200);
    expect(listed.body).to.deep.equal([]);
    expect(listed.headers).to.include({ 'content-type': 'application/json; charset=utf-8', 'x-ratelimit-limit': '3', 'x-ratelimit-remaining': '2' });
    expect(listed.headers['x-ratelimit-reset']).to.equal(String(Date.UTC(2030, 0, 1, 12, 1) / 1000));
    expect(listed.headers['ratelimit-policy']).to.equal('"minute";q=3;w=60, "day";q=1000;w=86400');
    expect(listed.headers.ratelimit).to.match(/^"minute";r=2;t=42, "day";r=999;t=\d+$/);
    expect(listed.headers['x-request-id']).to.match(/^[0-9a-f-]{36}$/);

    const create = {
      method: 'POST',
      headers: { Authorization: authorization, 'Content-Type': 'application/json', 'Idempotency-Key': 'browser-create-1', 'X-Request-Id': 'from-the-page' },
      body: JSON.stringify({ name: 'Rex', categoryId: 1 }),
    };
    const created = await fetchInPage(page, `${stack.baseUrl}/v1/pets`, create);
    expect(created.status).to.equal(201);
    expect(created.body).to.deep.include({ id: 1, name: 'Rex', categoryId: 1 });
    expect(created.headers).to.include({ location: '/v1/pets/1', 'x-request-id': 'from-the-page', 'x-ratelimit-remaining': '1', 'idempotent-replayed': null });
    const replayed = await fetchInPage(page, `${stack.baseUrl}/v1/pets`, create);
    expect(replayed.status).to.equal(201);
    expect(replayed.headers).to.include({ location: '/v1/pets/1', 'idempotent-replayed': 'true', 'x-ratelimit-remaining': '0' });

    const limited = await fetchInPage(page, `${stack.baseUrl}/v1/pets`, { headers: { Authorization: authorization } });
    expect(limited.status).to.equal(429);
    expect(limited.body).to.deep.equal({ code: 'rate_limited', message: 'rate limit exceeded: 3 requests per minute', status: 429 });
    expect(limited.headers).to.include({ 'retry-after': '42', 'x-ratelimit-limit': '3', 'x-ratelimit-remaining': '0' });
  });

  it('keeps every response from a page of an origin CORS_ORIGINS does not list: fetch rejects', async () => {
    await page.goto(browser.otherPage.url);
    // A simple GET goes out without a preflight; the browser withholds the answer.
    expect(await fetchErrorInPage(page, `${stack.baseUrl}/v1/openapi.json`)).to.match(/TypeError: Failed to fetch/);
    // A request with Authorization needs a preflight, which gets no CORS headers.
    expect(await fetchErrorInPage(page, `${stack.baseUrl}/v1/pets`, { headers: { Authorization: `Bearer ${secretOf('browser')}` } })).to.match(
      /TypeError: Failed to fetch/,
    );
    // The same calls from the allowed origin succeed, so it is the origin that made the difference.
    await page.goto(browser.allowedPage.url);
    expect(await fetchErrorInPage(page, `${stack.baseUrl}/v1/openapi.json`)).to.equal(undefined);
  });
});
