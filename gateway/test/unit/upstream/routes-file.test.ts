import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { loadRoutesFile, parseRoutes } from '../../../src/upstream/routes-file';

const ORDERS = { prefix: '/v1/store/orders', upstream: 'http://orders:8080', methods: ['GET', 'POST'], timeoutMs: 5000 };

function parseOne(changes: Record<string, unknown>): () => unknown {
  return () => parseRoutes({ routes: [{ ...ORDERS, ...changes }] }, 'ROUTES_FILE r.yaml');
}

describe('routes file', () => {
  it('reads a complete entry, adding HEAD wherever GET is', () => {
    const [route] = parseRoutes({ routes: [{ ...ORDERS, upstream: 'http://orders:8080/api', bodyLimitBytes: 1024, plans: ['pro'] }] });
    expect(route).to.deep.include({ prefix: '/v1/store/orders', methods: ['GET', 'POST', 'HEAD'], timeoutMs: 5000, bodyLimitBytes: 1024, plans: ['pro'] });
    expect(route!.upstream.href).to.equal('http://orders:8080/api');
    expect(parseRoutes({ routes: [ORDERS] })[0]).to.deep.include({ bodyLimitBytes: undefined, plans: undefined });
  });

  it('names the bad entry and field in one line', () => {
    expect(parseOne({ timeoutMs: 'soon' })).to.throw(/^ROUTES_FILE r\.yaml: routes\[0\] "\/v1\/store\/orders": timeoutMs must be a positive integer$/);
    expect(parseOne({ timeoutMs: 0 })).to.throw(/timeoutMs must be a positive integer/);
    expect(parseOne({ bodyLimitBytes: 1.5 })).to.throw(/"\/v1\/store\/orders": bodyLimitBytes must be a positive integer/);
    expect(parseOne({ methods: ['GET', 'FETCH'] })).to.throw(/"\/v1\/store\/orders": methods must be a non-empty list of GET, HEAD/);
    expect(parseOne({ methods: [] })).to.throw(/methods must be a non-empty list/);
    expect(parseOne({ plans: ['gold'] })).to.throw(/"\/v1\/store\/orders": plans must be a non-empty list of free, pro, business, enterprise/);
    expect(parseOne({ upstream: 'https://orders' })).to.throw(/upstream must be an http:\/\/ URL/);
    expect(parseOne({ upstream: 'http://user:pw@orders' })).to.throw(/upstream must be an http:\/\/ URL without credentials/);
    expect(parseOne({ upstream: 'http://orders?x=1' })).to.throw(/upstream must be an http:\/\/ URL/);
    expect(parseOne({ upstream: 'orders:8080' })).to.throw(/upstream must be an http:\/\/ URL/);
    expect(parseOne({ timeout: 5000 })).to.throw(/"\/v1\/store\/orders": unknown field "timeout"/);
    expect(() => parseRoutes({ routes: [ORDERS, 'x'] }, 'f')).to.throw(/^f: routes\[1\]: must be a mapping$/);
    expect(() => parseRoutes({ route: [] }, 'f')).to.throw(/^f: must have a "routes" list$/);
  });

  it('takes only prefixes below /v1, without a trailing slash or patterns', () => {
    for (const prefix of ['/store/orders', '/v1', '/v1/', '/v1/store/', '/v1/store//orders', '/v1/store/:id', '/v1/store/*', '/v2/orders']) {
      expect(parseOne({ prefix }), prefix).to.throw(/routes\[0\]: prefix must be \/v1\//);
    }
  });

  it("refuses to shadow the gateway's own routes, in any letter case", () => {
    expect(parseOne({ prefix: '/v1/pets' })).to.throw(/^ROUTES_FILE r\.yaml: routes\[0\] "\/v1\/pets": would shadow the gateway's own \/v1\/pets$/);
    expect(parseOne({ prefix: '/v1/PETS' })).to.throw(/would shadow the gateway's own \/v1\/pets/);
    expect(parseOne({ prefix: '/v1/pets/42' })).to.throw(/would shadow the gateway's own \/v1\/pets$/);
    expect(parseOne({ prefix: '/v1/pets/42/photos' })).to.throw(/would shadow/);
    expect(parseOne({ prefix: '/v1/openapi.json' })).to.throw(/would shadow the gateway's own \/v1\/openapi\.json/);
    expect(parseOne({ prefix: '/v1/petshop' })).to.not.throw();
  });

  it('refuses prefixes that overlap, since the order of the file would pick the route', () => {
    const nested = { ...ORDERS, prefix: '/v1/store' };
    expect(() => parseRoutes({ routes: [ORDERS, nested] }, 'f')).to.throw(/^f: routes\[0\] "\/v1\/store\/orders": overlaps routes\[1\] "\/v1\/store"$/);
    expect(() => parseRoutes({ routes: [ORDERS, { ...ORDERS, prefix: '/v1/Store/Orders' }] }, 'f')).to.throw(/overlaps/);
    expect(parseRoutes({ routes: [ORDERS, { ...ORDERS, prefix: '/v1/store/carts' }] })).to.have.length(2);
  });

  it('loads YAML, and reports a syntax error by line in one line', () => {
    const dir = mkdtempSync(join(tmpdir(), 'routes-'));
    const good = join(dir, 'good.yaml');
    writeFileSync(good, 'routes:\n  - prefix: /v1/store/orders\n    upstream: http://orders:8080\n    methods: [GET]\n    timeoutMs: 5000\n');
    expect(loadRoutesFile(good)).to.have.length(1);
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'routes:\n  - prefix: /v1/store/orders\n   methods: [GET\n');
    expect(() => loadRoutesFile(bad)).to.throw(/^ROUTES_FILE \S+bad\.yaml: .+ at line 3, column \d+$/);
  });
});
