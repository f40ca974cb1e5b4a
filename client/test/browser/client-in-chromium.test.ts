import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { type BrowserWithPages, launchChromiumWithPagesOrSkip } from '../../../system-test/support/browser';
import type { CrossOriginPage } from '../../../system-test/support/cross-origin-page';
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
let baseUrl;
// The gateway's clock, mirrored: the page's waits move both.
let clock;
const options = (apiKey) => ({
  baseUrl,
  apiKey,
  now: () => clock,
  sleep: async (ms) => {
    clock += ms;
    await window.advance(ms);
  },
  random: () => 0.5,
});
window.run = async ({ gateway, bulk, tight }) => {
  baseUrl = gateway;
  clock = await window.gatewayNow();
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
window.failure = async ({ gateway, bulk }) => {
  baseUrl = gateway;
  clock = await window.gatewayNow();
  const start = clock;
  try {
    await createPetstoreClient({ ...options(bulk), retry: { budgetMs: 5000 } }).createPet({ name: 'x', categoryId: 1n });
  } catch (e) {
    return { isPetstoreError: e instanceof PetstoreError, code: e.code, status: e.status, waited: clock - start };
  }
};
`;

const PAGE = `<!doctype html><script type="module">${PAGE_SCRIPT}</script>`;

describe('petstore client in Chromium, on a page of another origin', function () {
  this.timeout(60_000);
  let browser: BrowserWithPages;
  let stack: RateLimitStack;
  let page: Page;

  before(async function () {
    browser = await launchChromiumWithPagesOrSkip(this, { '/': PAGE, '/client.js': await bundleForBrowser() });
  });

  after(async () => {
    await browser?.close();
  });

  beforeEach(async () => {
    stack = await startRateLimitStack({ keys: KEYS, corsOrigins: [browser.allowedPage.origin] });
    page = await browser.newPage();
    await page.exposeFunction('gatewayNow', () => stack.now());
    await page.exposeFunction('advance', (ms: number) => stack.setNow(stack.now() + ms));
  });

  afterEach(async () => {
    await page?.close();
    await stack.close();
  });

  /** Opens the page of `pageOfOrigin`; the arguments its functions take, as a JS literal. */
  async function open(pageOfOrigin: CrossOriginPage): Promise<string> {
    await page.goto(pageOfOrigin.url);
    await page.waitForFunction('typeof window.run === "function"');
    return JSON.stringify({ gateway: stack.baseUrl, bulk: secretOf('bulk'), tight: secretOf('tight') });
  }

  it('creates, pages, reports errors and sits out 429s through CORS', async () => {
    const args = await open(browser.allowedPage);
    expect(new URL(page.url()).origin).to.not.equal(new URL(stack.baseUrl).origin);
    const statuses: number[] = [];
    page.on('response', (response) => {
      if (new URL(response.url()).pathname === '/v1/pets') statuses.push(response.status());
    });
    const result = await page.evaluate<Record<string, unknown>>(`window.run(${args})`);
    expect(result.createdIds).to.deep.equal(['bigint:1', 'bigint:2', 'bigint:3', 'bigint:4', 'bigint:5']);
    // Paging needs Link, the ids the exact body, the error its X-Request-Id, the waits Retry-After
    // and the snapshot X-RateLimit-*: all read across origins.
    expect(result.listedIds).to.deep.equal(['1', '2', '3', '4', '5']);
    expect(result.categoryIds).to.deep.equal(Array(5).fill('9223372036854775807'));
    expect(result.first).to.deep.equal({ id: '1', name: 'p0', categoryId: '9223372036854775807', status: 'available' });
    expect(result.error).to.deep.include({ isPetstoreError: true, code: 'invalid_request', status: 400 });
    expect((result.error as { requestId: unknown }).requestId).to.be.a('string');
    expect(result.rateLimit).to.deep.include({ limit: 3 });
    expect(statuses.filter((status) => status === 429).length, 'the tight key was limited and retried').to.be.greaterThan(0);
  });

  it("reports a gateway that does not allow the page's origin as network_error, after retrying within its budget", async () => {
    const args = await open(browser.otherPage);
    const result = await page.evaluate<Record<string, unknown>>(`window.failure(${args})`);
    expect(result).to.deep.include({ isPetstoreError: true, code: 'network_error', status: 0 });
    expect(result.waited, 'it retried, within its 5 s budget').to.be.within(1, 5000);
  });
});
