import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { type HttpUpstream, startHttpUpstream } from './support/http-upstream';
import { type OtlpReceiver, type ReceivedSpan, SPAN_KIND, startOtlpReceiver, STATUS_CODE } from './support/otlp-receiver';
import { freePort } from './support/redis-server';
import { type ProcessStack, startProcessStack } from './support/process-stack';

const KEY = 'demo-free-key-0000';
const AUTH = { authorization: `Bearer ${KEY}` };
/** The free plan's minute: the 61st request is refused. */
const FREE_PER_MINUTE = 60;

function newTraceparent(): { traceId: string; parentId: string; traceparent: string } {
  const traceId = randomBytes(16).toString('hex');
  const parentId = randomBytes(8).toString('hex');
  return { traceId, parentId, traceparent: `00-${traceId}-${parentId}-01` };
}

/** A routes file proxying /v1/things to `upstream`. */
function routesFileFor(upstream: HttpUpstream): string {
  const path = join(mkdtempSync(join(tmpdir(), 'tracing-routes-')), 'routes.json');
  writeFileSync(path, JSON.stringify({ routes: [{ prefix: '/v1/things', upstream: upstream.url, methods: ['GET'], timeoutMs: 2000 }] }));
  return path;
}

function one(spans: readonly ReceivedSpan[], where: string, matches: (span: ReceivedSpan) => boolean): ReceivedSpan {
  const found = spans.filter(matches);
  expect(found, `${where}: ${JSON.stringify(spans, null, 1)}`).to.have.length(1);
  return found[0]!;
}

describe('traces: gateway and pet service processes exporting to an OTLP/HTTP receiver', function () {
  this.timeout(60_000);
  let receiver: OtlpReceiver;
  let upstream: HttpUpstream;
  let stack: ProcessStack;

  before(async () => {
    receiver = await startOtlpReceiver();
    upstream = await startHttpUpstream();
    // Exported every 20 ms, so a test waits for spans, not for the default 5 s batch delay.
    const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: '20' };
    stack = await startProcessStack({
      // At debug the pet service logs every call, so each call's line can be checked for its ids.
      petService: { ...otel, LOG_LEVEL: 'debug' },
      gateway: { ...otel, ROUTES_FILE: routesFileFor(upstream) },
    });
  });

  after(async () => {
    await stack?.stop();
    await receiver?.close();
    await upstream?.close();
  });

  /** Every span of `traceId`, once `count` of them have arrived. */
  const traceOf = async (traceId: string, count: number): Promise<ReceivedSpan[]> =>
    (await receiver.waitFor((spans) => spans.filter((span) => span.traceId === traceId).length >= count)).filter((span) => span.traceId === traceId);

  it('links gateway → gRPC client → pet service → store under the client’s trace, and logs the ids in both services', async () => {
    const { traceId, parentId, traceparent } = newTraceparent();
    const response = await fetch(`${stack.baseUrl}/v1/pets?limit=5`, { headers: { ...AUTH, traceparent, tracestate: 'vendor=abc' } });
    expect(response.status).to.equal(200);
    await response.text();

    const spans = await traceOf(traceId, 4);
    expect(spans).to.have.length(4);
    const server = one(spans, 'gateway server span', (span) => span.service === 'gateway' && span.kind === SPAN_KIND.SERVER);
    expect(server.parentSpanId).to.equal(parentId);
    expect(server.name).to.equal('GET /v1/pets');
    expect(server.traceState).to.equal('vendor=abc');
    expect(server.attributes).to.include({
      'http.request.method': 'GET',
      'http.route': '/v1/pets',
      'http.response.status_code': 200,
      'url.path': '/v1/pets',
      'petstore.api_key.id': 'demo-free',
      'petstore.plan': 'free',
      'petstore.rate_limit.decision': 'allowed',
    });
    const call = one(spans, 'gRPC client span', (span) => span.service === 'gateway' && span.kind === SPAN_KIND.CLIENT);
    expect(call.parentSpanId).to.equal(server.spanId);
    expect(call.name).to.equal('petstore.v1.PetService/ListPets');
    expect(call.attributes).to.include({ 'rpc.system.name': 'grpc', 'rpc.method': 'petstore.v1.PetService/ListPets', 'rpc.status_code': 'OK' });
    const served = one(spans, 'pet service server span', (span) => span.service === 'pet-service' && span.kind === SPAN_KIND.SERVER);
    expect(served.parentSpanId).to.equal(call.spanId);
    expect(served.name).to.equal('petstore.v1.PetService/ListPets');
    expect(served.attributes).to.include({ 'rpc.system.name': 'grpc', 'rpc.status_code': 'OK' });
    const store = one(spans, 'store span', (span) => span.service === 'pet-service' && span.kind === SPAN_KIND.CLIENT);
    expect(store.parentSpanId).to.equal(served.spanId);
    expect(store.name).to.equal('find pets');
    expect(store.attributes).to.include({ 'db.system.name': 'memory', 'db.collection.name': 'pets', 'db.operation.name': 'find' });
    // The key's secret and the Authorization header are in no span.
    expect(JSON.stringify(spans)).not.to.include(KEY);

    const gatewayLine = await stack.gateway.waitForLog((line) => line.traceId === traceId && line.msg === 'request');
    expect(gatewayLine).to.include({ spanId: server.spanId, route: '/v1/pets', status: 200 });
    const petLine = await stack.petService.waitForLog((line) => line.traceId === traceId && line.msg === 'grpc call');
    expect(petLine).to.include({ spanId: served.spanId, method: 'ListPets', code: 'OK' });
  });

  it('traces a create down to its insert, and a request without traceparent as a new trace', async () => {
    const response = await fetch(`${stack.baseUrl}/v1/pets`, {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Traced', categoryId: 1 }),
    });
    expect(response.status).to.equal(201);
    const requestId = response.headers.get('x-request-id')!;
    const line = await stack.gateway.waitForLog((entry) => entry.requestId === requestId && entry.msg === 'request');
    const traceId = line.traceId as string;
    expect(traceId).to.match(/^[0-9a-f]{32}$/);
    const spans = await traceOf(traceId, 4);
    const server = one(spans, 'gateway server span', (span) => span.kind === SPAN_KIND.SERVER && span.service === 'gateway');
    expect(server.parentSpanId).to.equal('');
    expect(server).to.include({ name: 'POST /v1/pets', spanId: line.spanId });
    expect(server.attributes['http.response.status_code']).to.equal(201);
    const store = one(spans, 'store span', (span) => span.service === 'pet-service' && span.kind === SPAN_KIND.CLIENT);
    expect(store.name).to.equal('insert pets');
    expect(JSON.stringify(store.attributes)).not.to.include('Traced');
  });

  it('gives a proxied call a client span, the parent the upstream is told of, in place of the client’s', async () => {
    const { traceId, parentId, traceparent } = newTraceparent();
    const response = await fetch(`${stack.baseUrl}/v1/things/a?x=1`, { headers: { ...AUTH, traceparent } });
    expect(response.status).to.equal(200);
    const received = await upstream.nextRequest();
    const spans = await traceOf(traceId, 2);
    const server = one(spans, 'gateway server span', (span) => span.kind === SPAN_KIND.SERVER);
    expect(server).to.include({ parentSpanId: parentId, name: 'GET /v1/things' });
    const call = one(spans, 'proxy client span', (span) => span.kind === SPAN_KIND.CLIENT);
    expect(call.parentSpanId).to.equal(server.spanId);
    expect(call.name).to.equal('GET');
    const port = Number(new URL(upstream.url).port);
    expect(call.attributes).to.include({ 'http.request.method': 'GET', 'http.response.status_code': 200, 'server.address': '127.0.0.1', 'server.port': port });
    expect(call.attributes['url.full']).to.equal(`${new URL(upstream.url).origin}/a`);
    expect(received.headers.traceparent).to.equal(`00-${traceId}-${call.spanId}-01`);
  });

  it('marks a 404 from the pet service on the client span, and keeps the server span unset', async () => {
    const { traceId, traceparent } = newTraceparent();
    const response = await fetch(`${stack.baseUrl}/v1/pets/987654321`, { headers: { ...AUTH, traceparent } });
    expect(response.status).to.equal(404);
    const spans = await traceOf(traceId, 4);
    const call = one(spans, 'gRPC client span', (span) => span.service === 'gateway' && span.kind === SPAN_KIND.CLIENT);
    expect(call.attributes['rpc.status_code']).to.equal('NOT_FOUND');
    const served = one(spans, 'pet service server span', (span) => span.service === 'pet-service' && span.kind === SPAN_KIND.SERVER);
    // NOT_FOUND is the caller's doing: not an error of the server.
    expect(served.statusCode).to.equal(STATUS_CODE.UNSET);
    const server = one(spans, 'gateway server span', (span) => span.service === 'gateway' && span.kind === SPAN_KIND.SERVER);
    expect(server.name).to.equal('GET /v1/pets/:petId');
    expect(server.statusCode).to.equal(STATUS_CODE.UNSET);
  });

  /**
   * A refused request's trace has the gateway's server span only. The pet service exports in the
   * order spans end, so once a later request's pet service spans have arrived, any of the refused
   * trace's would have too.
   */
  const expectRefusedAtTheEdge = async (traceId: string): Promise<ReceivedSpan> => {
    const [server] = await traceOf(traceId, 1);
    const later = newTraceparent();
    const response = await fetch(`${stack.baseUrl}/v1/pets?limit=1`, { headers: { authorization: 'Bearer demo-pro-key-0000', traceparent: later.traceparent } });
    expect(response.status).to.equal(200);
    await traceOf(later.traceId, 4);
    expect(receiver.spans.filter((span) => span.traceId === traceId)).to.have.length(1);
    expect(stack.petService.logs.some((line) => line.traceId === traceId)).to.equal(false);
    return server!;
  };

  it('gives a 401 a server span with the refusal, and no pet service span', async () => {
    const { traceId, parentId, traceparent } = newTraceparent();
    const response = await fetch(`${stack.baseUrl}/v1/pets`, { headers: { authorization: 'Bearer not-a-key', traceparent } });
    expect(response.status).to.equal(401);
    const server = await expectRefusedAtTheEdge(traceId);
    expect(server).to.include({ service: 'gateway', kind: SPAN_KIND.SERVER, parentSpanId: parentId, name: 'GET /v1/pets' });
    expect(server.attributes).to.include({ 'http.response.status_code': 401, 'petstore.refusal': 'unauthorized', 'petstore.rate_limit.decision': 'allowed' });
    expect(server.attributes).not.to.have.property('petstore.api_key.id');
  });

  it('gives a 429 a server span with the limit decision and the refusal, and no pet service span', async () => {
    let traceId = '';
    // The gateway counts on the wall clock: a minute that ends between the last refusal and the
    // traced request admits it, and is spent again (once; its answer says so by its reset).
    for (let attempt = 0; attempt < 2 && traceId === ''; attempt += 1) {
      // This suite's other requests used the key too; whatever is left of its minute is spent here.
      let status = 200;
      let reset: string | null = null;
      for (let sent = 0; sent <= FREE_PER_MINUTE && status !== 429; sent += 1) {
        const response = await fetch(`${stack.baseUrl}/v1/pets?limit=1`, { headers: AUTH });
        [status, reset] = [response.status, response.headers.get('x-ratelimit-reset')];
        await response.text();
      }
      expect(status).to.equal(429);
      const traced = newTraceparent();
      const response = await fetch(`${stack.baseUrl}/v1/pets?limit=1`, { headers: { ...AUTH, traceparent: traced.traceparent } });
      await response.text();
      if (response.status !== 429 && response.headers.get('x-ratelimit-reset') !== reset) continue;
      expect(response.status).to.equal(429);
      traceId = traced.traceId;
    }
    expect(traceId, 'a refusal traced within one minute').to.not.equal('');
    const server = await expectRefusedAtTheEdge(traceId);
    expect(server.attributes).to.include({
      'http.response.status_code': 429,
      'petstore.api_key.id': 'demo-free',
      'petstore.plan': 'free',
      'petstore.rate_limit.decision': 'limited',
      'petstore.refusal': 'rate_limited',
    });
  });

  it('sent every export as OTLP/protobuf to /v1/traces', () => {
    expect(receiver.requests).to.be.greaterThan(0);
    expect(receiver.malformed).to.equal(0);
  });
});

describe('traces: export off (the default), trace context still propagated', function () {
  this.timeout(60_000);
  let upstream: HttpUpstream;
  let stack: ProcessStack;

  before(async () => {
    upstream = await startHttpUpstream();
    stack = await startProcessStack({ petService: { LOG_LEVEL: 'debug' }, gateway: { ROUTES_FILE: routesFileFor(upstream) } });
  });

  after(async () => {
    await stack?.stop();
    await upstream?.close();
  });

  it('hands the client’s trace, under the gateway’s span id and the client’s sampled flag, to the pet service and upstreams', async () => {
    const { traceId, parentId, traceparent } = newTraceparent();
    const listed = await fetch(`${stack.baseUrl}/v1/pets`, { headers: { ...AUTH, traceparent, tracestate: 'vendor=abc' } });
    expect(listed.status).to.equal(200);
    const gatewayLine = await stack.gateway.waitForLog((line) => line.traceId === traceId && line.msg === 'request');
    expect(gatewayLine.spanId).to.match(/^[0-9a-f]{16}$/).and.not.equal(parentId);
    const petLine = await stack.petService.waitForLog((line) => line.traceId === traceId && line.msg === 'grpc call');
    expect(petLine.spanId).to.match(/^[0-9a-f]{16}$/).and.not.equal(gatewayLine.spanId);

    const { traceId: proxiedTrace, traceparent: proxiedParent } = newTraceparent();
    const proxied = await fetch(`${stack.baseUrl}/v1/things/b`, { headers: { ...AUTH, traceparent: proxiedParent, tracestate: 'vendor=abc' } });
    expect(proxied.status).to.equal(200);
    const received = await upstream.nextRequest();
    const line = await stack.gateway.waitForLog((entry) => entry.traceId === proxiedTrace && entry.msg === 'request');
    expect(received.headers.traceparent).to.equal(`00-${proxiedTrace}-${String(line.spanId)}-01`);
    expect(received.headers.tracestate).to.equal('vendor=abc');
  });

  it('starts a trace for a request without one, or with a malformed one', async () => {
    for (const traceparent of [undefined, '00-not-a-trace-01', `00-${'0'.repeat(32)}-${'1'.repeat(16)}-01`]) {
      const response = await fetch(`${stack.baseUrl}/v1/pets/1`, {
        headers: { ...AUTH, ...(traceparent === undefined ? {} : { traceparent }) },
      });
      await response.text();
      const requestId = response.headers.get('x-request-id');
      const line = await stack.gateway.waitForLog((entry) => entry.requestId === requestId && entry.msg === 'request');
      expect(line.traceId).to.match(/^[0-9a-f]{32}$/).and.not.equal('0'.repeat(32));
    }
  });
});

describe('traces: an exporter whose collector is down', function () {
  this.timeout(60_000);
  let stack: ProcessStack;

  before(async () => {
    // A port nothing listens on: every export is refused.
    const otel = {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${await freePort()}`,
      OTEL_BSP_SCHEDULE_DELAY: '10', OTEL_BSP_MAX_QUEUE_SIZE: '64',
      // Read by the exporter itself: each export gives up after a second, retries included.
      OTEL_EXPORTER_OTLP_TIMEOUT: '1000',
    };
    stack = await startProcessStack({ petService: otel, gateway: otel });
  });

  after(async () => {
    await stack?.stop();
  });

  it('fails no request, reports the failure once, and still logs trace ids', async () => {
    const statuses = new Map<number, number>();
    for (let sent = 0; sent < 50; sent += 1) {
      const response = await fetch(`${stack.baseUrl}/v1/pets?limit=2`, { headers: { authorization: 'Bearer demo-enterprise-key-0000' } });
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      await response.text();
    }
    expect(Object.fromEntries(statuses)).to.deep.equal({ 200: 50 });
    const failed = (line: Record<string, unknown>): boolean => line.msg === 'trace export failed; spans are dropped until the collector answers';
    await stack.gateway.waitForLog(failed);
    await stack.petService.waitForLog(failed);
    expect(stack.gateway.logs.filter(failed)).to.have.length(1);
    expect(stack.gateway.logs.filter((line) => line.msg === 'request').every((line) => /^[0-9a-f]{32}$/.test(String(line.traceId)))).to.equal(true);
    // A clean stop still: the bounded flush gives up on the collector.
    expect(await stack.gateway.stop()).to.equal(0);
    expect(await stack.petService.stop()).to.equal(0);
  });
});
