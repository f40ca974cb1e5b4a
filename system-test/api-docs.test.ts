import { expect } from 'chai';
import { API_DOCS_CSP } from '../gateway/src/http/api-docs-router';
import { DEFAULT_RATE_LIMIT_SETTINGS } from '../gateway/src/rate-limit/rate-limit-policy';
import { compileComponentSchema } from '../gateway/src/http/json-schema';
import { startTestStack, TEST_KEYS, type TestStack } from './support/test-stack';

const validateError = compileComponentSchema('Error');

/** The JSON Error body of the API, with this status and code. */
async function expectErrorBody(response: Response, status: number, code: string): Promise<void> {
  expect(response.status).to.equal(status);
  expect(response.headers.get('content-type')).to.equal('application/json; charset=utf-8');
  const body: unknown = await response.json();
  expect(validateError(body), JSON.stringify(body)).to.equal(true);
  expect(body).to.include({ code, status });
}

/** The same-origin files the page links to, in document order. */
function linkedFiles(html: string): string[] {
  return [...html.matchAll(/(?:src|href)="(\/[^"]+)"/g)].map((match) => match[1]!);
}

describe('GET /docs: the API reference page over HTTP', function () {
  this.timeout(30_000);
  let stack: TestStack;
  let html: string;

  before(async () => {
    stack = await startTestStack();
    html = await (await fetch(`${stack.baseUrl}/docs`)).text();
  });
  after(() => stack.close());

  it('answers without a key: HTML, never cached, under a strict CSP, charged to the client IP', async () => {
    const response = await fetch(`${stack.baseUrl}/docs`);
    expect(response.status).to.equal(200);
    expect(response.headers.get('content-type')).to.equal('text/html; charset=utf-8');
    expect(response.headers.get('cache-control')).to.equal('no-cache');
    expect(response.headers.get('content-security-policy')).to.equal(API_DOCS_CSP);
    expect(API_DOCS_CSP).to.match(/^default-src 'self'; /);
    expect(API_DOCS_CSP).to.not.include('unsafe');
    expect(response.headers.get('x-ratelimit-limit')).to.equal(String(DEFAULT_RATE_LIMIT_SETTINGS.unauthenticatedPerMinute));
    expect(await response.text()).to.equal(html);
    expect(html).to.not.match(/<script>|<style|style=|https?:\/\//);
  });

  it('serves every file the page links to from the gateway, cached for a year', async () => {
    const files = linkedFiles(html);
    expect(files).to.have.length(4);
    for (const file of files) {
      const response = await fetch(`${stack.baseUrl}${file}`);
      expect(response.status, file).to.equal(200);
      expect((await response.arrayBuffer()).byteLength, file).to.be.greaterThan(0);
      expect(response.headers.get('x-content-type-options'), file).to.equal('nosniff');
      expect(response.headers.get('x-ratelimit-limit'), `${file} is charged`).to.not.equal(null);
      const immutable = file.startsWith('/docs/swagger-ui-');
      expect(response.headers.get('cache-control'), file).to.equal(immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
    }
    const types = await Promise.all(files.map(async (file) => (await fetch(`${stack.baseUrl}${file}`)).headers.get('content-type')));
    expect(types).to.deep.equal(['text/css; charset=utf-8', 'image/png', 'text/javascript; charset=utf-8', 'text/javascript; charset=utf-8']);
  });

  it('answers HEAD like GET, without a body, and 405 with Allow to other methods', async () => {
    for (const path of ['/docs', ...linkedFiles(html)]) {
      const head = await fetch(`${stack.baseUrl}${path}`, { method: 'HEAD' });
      expect(head.status, path).to.equal(200);
      expect(await head.text(), path).to.equal('');
      const post = await fetch(`${stack.baseUrl}${path}`, { method: 'POST' });
      expect(post.status, path).to.equal(405);
      expect(post.headers.get('allow'), path).to.equal('GET, HEAD');
      await expectErrorBody(post, 405, 'method_not_allowed');
    }
  });

  it('answers /docs/ and any case like express routes do', async () => {
    for (const path of ['/docs/', '/DOCS', '/Docs/']) {
      const response = await fetch(`${stack.baseUrl}${path}`);
      expect(response.status, path).to.equal(200);
      expect(await response.text(), path).to.equal(html);
    }
  });

  it("answers the JSON 404 for any other path under /docs, the package's other files included", async () => {
    const asset = linkedFiles(html).find((file) => file.startsWith('/docs/swagger-ui-'))!;
    const directory = asset.slice(0, asset.lastIndexOf('/'));
    for (const path of [
      '/docs/nope',
      '/docs/swagger-ui.css',
      `${directory}/index.html`,
      `${directory}/swagger-initializer.js`,
      `${directory}/package.json`,
      `${directory}/..%2fpackage.json`,
      '/docs/swagger-ui-0.0.1/swagger-ui.css',
      `${directory}/swagger-ui.css/x`,
    ]) {
      const response = await fetch(`${stack.baseUrl}${path}`);
      expect(response.status, path).to.equal(404);
      await expectErrorBody(response, 404, 'not_found');
    }
  });

  it('charges a key that is sent to the key, and without one refuses past the per-IP limit with the JSON 429', async () => {
    const keyed = await fetch(`${stack.baseUrl}/docs`, { headers: { Authorization: `Bearer ${TEST_KEYS.enterprise}` } });
    expect(keyed.headers.get('x-ratelimit-limit')).to.equal('1000000000');
    // A fresh minute, so that the earlier tests' requests do not count.
    stack.setNow(Date.UTC(2031, 0, 1, 0, 0, 0));
    const limit = DEFAULT_RATE_LIMIT_SETTINGS.unauthenticatedPerMinute;
    for (let index = 1; index <= limit; index += 1) {
      const response = await fetch(`${stack.baseUrl}/docs`, { method: 'HEAD' });
      expect(response.status, `request ${index}`).to.equal(200);
    }
    const refused = await fetch(`${stack.baseUrl}/docs`);
    expect(refused.headers.get('retry-after')).to.equal('60');
    await expectErrorBody(refused, 429, 'rate_limited');
    const openApi = await fetch(`${stack.baseUrl}/v1/openapi.json`);
    expect(openApi.status, 'the document the page loads stays free').to.equal(200);
  });
});
