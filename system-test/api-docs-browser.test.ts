import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { ERROR_CODES } from '../gateway/src/http/api-error';
import { GUIDE_SUMMARY } from '../gateway/src/http/openapi/introduction';
import { RATE_LIMIT_HEADERS } from '../gateway/src/http/openapi/responses';
import { launchChromiumOrSkip } from './support/browser';
import { startTestStack, TEST_KEYS, type TestStack } from './support/test-stack';

/** Where the screenshot is kept (git-ignored); CI uploads the directory. */
const ARTIFACTS = join(__dirname, '..', 'test-artifacts');

/**
 * The API reference at /docs in a real browser (Debian's headless Chromium), against a real
 * gateway and pet service. Any console error (a CSP violation is one), uncaught page error, failed
 * request or same-origin 4xx/5xx fails the test, so a blocked script or a missing asset cannot
 * pass unnoticed.
 */
describe('API reference page in Chromium', function () {
  this.timeout(90_000);
  let browser: Browser | undefined;
  let stack: TestStack | undefined;
  let page: Page;
  const problems: string[] = [];

  before(async function () {
    browser = await launchChromiumOrSkip(this);
    stack = await startTestStack();
  });
  after(async () => {
    await browser?.close();
    await stack?.close();
  });
  beforeEach(async () => {
    problems.length = 0;
    page = await browser!.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') problems.push(`console ${message.type()}: ${message.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('requestfailed', (request) => problems.push(`request failed: ${request.url()} ${request.failure()?.errorText}`));
    page.on('response', (response) => {
      if (response.status() >= 400) problems.push(`${response.status()} for ${response.url()}`);
    });
  });
  afterEach(async () => {
    await page.close();
  });

  it('shows Authorize and the five operations first, the guide folded, with no console error, CSP violation or failed request', async () => {
    await page.goto(`${stack!.baseUrl}/docs`);
    await page.locator('#operations-pets-getPet').waitFor();
    for (const operation of ['listPets', 'createPet', 'getPet', 'updatePet', 'deletePet']) {
      expect(await page.locator(`#operations-pets-${operation}`).count(), operation).to.equal(1);
    }
    const paths = await page.locator('.opblock-summary [data-path]').evaluateAll((spans) => spans.map((span) => span.getAttribute('data-path')));
    expect(paths).to.deep.equal(['/pets', '/pets', '/pets/{petId}', '/pets/{petId}', '/pets/{petId}']);
    expect(await page.locator('#operations-pets-getPet .opblock-summary-path__deprecated').count(), 'getPet shown deprecated').to.equal(1);
    for (const operation of ['updatePet', 'deletePet']) {
      expect(await page.locator(`#operations-pets-${operation} .opblock-summary-path__deprecated`).count(), `${operation} not deprecated`).to.equal(0);
    }
    // Authorize and the operations come first: on screen without scrolling, the guide folded.
    for (const selector of ['button.authorize', '#operations-pets-listPets', '#operations-pets-getPet']) {
      const box = await page.locator(selector).first().boundingBox();
      expect(box!.y + box!.height, `${selector} within the first 900 pixels`).to.be.below(900);
    }
    await page.locator('.information-container summary', { hasText: GUIDE_SUMMARY }).click();
    const intro = await page.locator('.information-container').innerText();
    for (const heading of ['Authentication', 'Rate limits', 'Pagination', 'Deprecation', 'Errors']) expect(intro).to.include(heading);
    for (const header of Object.keys(RATE_LIMIT_HEADERS)) expect(intro).to.include(header);
    // The error-code table is rendered as a table, one row per code.
    const codes = await page.locator('.information-container table tbody tr td:first-child').allInnerTexts();
    expect(codes).to.deep.equal([...ERROR_CODES]);
    expect(problems).to.deep.equal([]);
  });

  it('"Try it out" lists pets through the running gateway with the key set in Authorize', async () => {
    const created = await fetch(`${stack!.baseUrl}/v1/pets`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${TEST_KEYS.enterprise}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'Shown in the browser', categoryId: 7 }),
    });
    expect(created.status).to.equal(201);

    await page.goto(`${stack!.baseUrl}/docs`);
    await page.locator('button.authorize').first().click();
    await page.locator('#auth-bearer-value').fill(TEST_KEYS.enterprise);
    await page.locator('.modal-ux button.authorize').click();
    await page.locator('.modal-ux button.btn-done').click();

    const listPets = page.locator('#operations-pets-listPets');
    await listPets.locator('.opblock-summary-control').click();
    await listPets.locator('button.try-out__btn').click();
    const answered = page.waitForResponse((response) => new URL(response.url()).pathname === '/v1/pets');
    await listPets.locator('button.execute').click();
    const response = await answered;
    expect(response.status()).to.equal(200);
    expect(await response.request().headerValue('authorization')).to.equal(`Bearer ${TEST_KEYS.enterprise}`);

    const shown = listPets.locator('.live-responses-table tbody tr.response');
    await shown.waitFor();
    expect((await shown.locator('.response-col_status').innerText()).trim()).to.equal('200');
    expect(await shown.locator('.response-col_description').innerText()).to.include('"name": "Shown in the browser"');

    mkdirSync(ARTIFACTS, { recursive: true });
    const screenshot = join(ARTIFACTS, 'api-docs.png');
    await page.screenshot({ path: screenshot, fullPage: true });
    console.log(`      screenshot: ${screenshot}`);
    expect(problems).to.deep.equal([]);
  });
});
