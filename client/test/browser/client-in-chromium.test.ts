import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { launchChromiumOrSkip } from '../../../system-test/support/browser';
import { secretOf, startRateLimitStack, type RateLimitStack } from '../../../system-test/support/rate-limit-stack';
import { bundleForBrowser } from '../../scripts/bundle';

const KEYS = [
  { id: 'bulk', plan: 'enterprise', limits: { perMinute: 1e9, perDay: 1e9 } },
  { id: 'tight', plan: 'enterprise', limits: { perMinute: 3, perDay: 1000 } },
] as const;

/**
 * Runs in the page: the bundled client against the gateway, with its waits moving the gateway's
 * clock (`advance`, exposed by the test). Plain JavaScript, as the page gets it.
 */
const PAGE_SCRIPT = `
import { createPetstoreClient, PetstoreError } from '/client.js';
const options = (apiKey) => ({
  baseUrl: location.origin,
  apiKey,
  now: () => window.gatewayNow(),
  sleep: (ms) => window.advance(ms),
  random: () => 0.5,
});
window.run = async ({ bulk, tight }) => {
  const client = createPetstoreClient(options(bulk));
  const created = [];
  for (let i = 0; i < 5; i++) created.push(await client.createPet({ name: 'p' + i, categoryId: 9223372036854775807n }));
  const listed = [];
  for await (const pet of client.listPets({ limit: 2 })) listed.push(pet);
  const strings = createPetstoreClient({ ...options(bulk), int64: 'string' });
  const first = (await strings.listPets({ limit: 1 }).next()).value;
  let error;
  try { await client.createPet({ name: '', categoryId: 1n }); } catch (e) { error = e; }
  const limited = createPetstoreClient(options(tight));
  for (let i = 0; i < 7; i++) await limited.listPets({ limit: 1 }).next();
  return {
    createdIds: created.map((pet) => typeof pet.id + ':' + pet.id),
    categoryIds: listed.map((pet) => pet.categoryId.toString()),
    listedIds: listed.map((pet) => pet.id.toString()),
    first,
    error: { isPetstoreError: error instanceof PetstoreError, code: error.code, status: error.status, requestId: error.requestId },
    rateLimit: limited.rateLimit,
  };
};
`;

describe('petstore client in Chromium', function () {
  this.timeout(60_000);
  let browser: Browser;
  let stack: RateLimitStack;
  let page: Page;
  let bundle: string;

  before(async function () {
    browser = await launchChromiumOrSkip(this);
    bundle = await bundleForBrowser();
  });

  after(async () => {
    await browser?.close();
  });

  beforeEach(async () => {
    stack = await startRateLimitStack({ keys: KEYS });
    page = await browser.newPage();
    await page.exposeFunction('gatewayNow', () => stack.now());
    await page.exposeFunction('advance', (ms: number) => stack.setNow(stack.now() + ms));
  });

  afterEach(async () => {
    await page?.close();
    await stack.close();
  });

  it('creates, pages, reports errors and sits out 429s on the same origin as the gateway', async () => {
    // The page and the bundle are served at the gateway's origin by the browser itself, so this
    // run needs no CORS; every /v1 request goes to the real gateway.
    await page.route(`${stack.baseUrl}/client-test.html`, (route) =>
      route.fulfill({ contentType: 'text/html', body: `<!doctype html><script type="module">${PAGE_SCRIPT}</script>` }),
    );
    await page.route(`${stack.baseUrl}/client.js`, (route) => route.fulfill({ contentType: 'text/javascript', body: bundle }));
    await page.goto(`${stack.baseUrl}/client-test.html`);
    await page.waitForFunction('typeof window.run === "function"');
    const statuses: number[] = [];
    page.on('response', (response) => {
      if (new URL(response.url()).pathname === '/v1/pets') statuses.push(response.status());
    });
    const keys = JSON.stringify({ bulk: secretOf('bulk'), tight: secretOf('tight') });
    const result = await page.evaluate<Record<string, unknown>>(`window.run(${keys})`);
    expect(result.createdIds).to.deep.equal(['bigint:1', 'bigint:2', 'bigint:3', 'bigint:4', 'bigint:5']);
    expect(result.listedIds).to.deep.equal(['1', '2', '3', '4', '5']);
    expect(result.categoryIds).to.deep.equal(Array(5).fill('9223372036854775807'));
    expect(result.first).to.deep.equal({ id: '1', name: 'p0', categoryId: '9223372036854775807', status: 'available' });
    expect(result.error).to.deep.include({ isPetstoreError: true, code: 'invalid_request', status: 400 });
    expect((result.error as { requestId: unknown }).requestId).to.be.a('string');
    expect(result.rateLimit).to.deep.include({ limit: 3 });
    expect(statuses.filter((status) => status === 429).length, 'the tight key was limited and retried').to.be.greaterThan(0);
  });
});
