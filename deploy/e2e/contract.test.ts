import { expect } from 'chai';
import { fetchWithinContract } from '../../system-test/support/openapi-validator';
import { clusterOrPending } from './support/kube';
import { bearer, deployed, OVERLAYS, type OverlayName } from './support/deployment';

describe('deploy/e2e: the HTTP contract through the gateway Service', function () {
  this.timeout(600_000);

  before(function () {
    clusterOrPending(this);
  });

  for (const name of Object.keys(OVERLAYS) as OverlayName[]) {
    describe(name, () => {
      let url = '';
      const json = { ...bearer('contract'), 'Content-Type': 'application/json' };

      before(async () => {
        url = (await deployed())[name].gatewayUrl;
      });

      it('serves the OpenAPI document without a key, and refuses /v1 without one (401)', async () => {
        expect((await fetchWithinContract(`${url}/v1/openapi.json`)).status).to.equal(200);
        const refused = await fetchWithinContract(`${url}/v1/pets`);
        expect(refused.status).to.equal(401);
        expect(refused.headers.get('www-authenticate')).to.match(/^Bearer /);
      });

      it('creates a pet (int64 exact), reads it back by id (deprecated) and in a page', async () => {
        const created = await fetchWithinContract(`${url}/v1/pets`, { method: 'POST', headers: json, body: '{"name":"Rex","categoryId":9223372036854775807}' });
        expect(created.status).to.equal(201);
        const text = await created.text();
        expect(text).to.include('"categoryId":9223372036854775807');
        const location = created.headers.get('location')!;
        expect(location).to.match(/^\/v1\/pets\/\d+$/);
        const read = await fetchWithinContract(`${url}${location}`, { headers: bearer('contract') });
        expect(read.status).to.equal(200);
        expect(read.headers.get('deprecation')).to.not.equal(null);
        expect(await read.text()).to.equal(text);
        const page = await fetchWithinContract(`${url}/v1/pets?limit=100`, { headers: bearer('contract') });
        expect(page.status).to.equal(200);
        expect((await page.text()).includes(text)).to.equal(true);
      });

      it('pages with Link rel="next" across pet service replicas (one page token secret)', async () => {
        for (let i = 0; i < 3; i++) {
          const created = await fetchWithinContract(`${url}/v1/pets`, { method: 'POST', headers: json, body: JSON.stringify({ name: `page-${i}`, categoryId: 2 }) });
          expect(created.status).to.equal(201);
        }
        let next: string | undefined = `${url}/v1/pets?limit=1`;
        let pages = 0;
        while (next !== undefined && pages < 3) {
          const page = await fetchWithinContract(next, { headers: bearer('contract') });
          expect(page.status, next).to.equal(200);
          expect(JSON.parse(await page.text())).to.have.length(1);
          const link = /<([^>]+)>;\s*rel="next"/.exec(page.headers.get('link') ?? '');
          next = link === null ? undefined : new URL(link[1]!, url).toString();
          pages++;
        }
        expect(pages).to.equal(3);
      });

      it('creates a pet, reserves it and sells it with If-Match, refuses a second sale and a stale ETag, and deletes it (issue 47)', async () => {
        const patch = { ...bearer('contract'), 'Content-Type': 'application/merge-patch+json' };
        const created = await fetchWithinContract(`${url}/v1/pets`, { method: 'POST', headers: json, body: '{"name":"Sold","categoryId":5}' });
        expect(created.status).to.equal(201);
        const location = created.headers.get('location')!;
        const reserved = await fetchWithinContract(`${url}${location}`, {
          method: 'PATCH',
          headers: { ...patch, 'If-Match': created.headers.get('etag')! },
          body: '{"status":"pending"}',
        });
        expect(reserved.status, await reserved.clone().text()).to.equal(200);
        const sold = await fetchWithinContract(`${url}${location}`, {
          method: 'PATCH',
          headers: { ...patch, 'If-Match': reserved.headers.get('etag')! },
          body: '{"status":"sold"}',
        });
        expect(sold.status).to.equal(200);
        expect(JSON.parse(await sold.text())).to.include({ name: 'Sold', status: 'sold' });
        const again = await fetchWithinContract(`${url}${location}`, { method: 'PATCH', headers: patch, body: '{"status":"sold"}' });
        expect([again.status, JSON.parse(await again.text()).code]).to.deep.equal([409, 'invalid_transition']);
        const stale = await fetchWithinContract(`${url}${location}`, { method: 'DELETE', headers: { ...bearer('contract'), 'If-Match': reserved.headers.get('etag')! } });
        expect([stale.status, stale.headers.get('etag')]).to.deep.equal([412, sold.headers.get('etag')]);
        const deleted = await fetchWithinContract(`${url}${location}`, { method: 'DELETE', headers: { ...bearer('contract'), 'If-Match': sold.headers.get('etag')! } });
        expect(deleted.status).to.equal(204);
        expect((await fetchWithinContract(`${url}${location}`, { headers: bearer('contract') })).status).to.equal(404);
      });

      it('answers an idempotent retry with the first result', async () => {
        const headers = { ...json, 'Idempotency-Key': `e2e-${name}-${Date.now()}` };
        const body = '{"name":"Once","categoryId":3}';
        const first = await fetchWithinContract(`${url}/v1/pets`, { method: 'POST', headers, body });
        const again = await fetchWithinContract(`${url}/v1/pets`, { method: 'POST', headers, body });
        expect([first.status, again.status]).to.deep.equal([201, 201]);
        expect(again.headers.get('idempotent-replayed')).to.equal('true');
        expect(await again.text()).to.equal(await first.text());
      });

      it('refuses bad input with the Error body: 400 naming the field, 415', async () => {
        const bad = await fetchWithinContract(`${url}/v1/pets`, { method: 'POST', headers: json, body: '{"name":"","categoryId":1}' });
        expect(bad.status).to.equal(400);
        expect(await bad.text()).to.include('name');
        const type = await fetchWithinContract(`${url}/v1/pets`, { method: 'POST', headers: { ...bearer('contract'), 'Content-Type': 'text/plain' }, body: 'x' });
        expect(type.status).to.equal(415);
      });
    });
  }
});
