import { expect } from 'chai';
import { fetchWithinContract } from './support/openapi-validator';
import { type ProcessStack, startProcessStack } from './support/process-stack';

const KEY = 'demo-free-key-0000';
const AUTH = { authorization: `Bearer ${KEY}` };
const UNAUTHENTICATED_PER_MINUTE = 20;

async function get(url: string, headers: Record<string, string> = AUTH): Promise<{ status: number; headers: Headers; text: string }> {
  // Only /v1 responses are checked: the admin port documents nothing.
  const response = await fetchWithinContract(url, { headers });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

describe('operations: real pet-service and gateway processes', function () {
  this.timeout(60_000);
  let stack: ProcessStack;

  before(async () => {
    stack = await startProcessStack({
      // At debug the pet service logs every call, fast successful ones too (LOG_SLOW_CALL_MS).
      petService: { LOG_LEVEL: 'debug' },
      gateway: { PET_SERVICE_TIMEOUT_MS: '1500', UNAUTHENTICATED_PER_MINUTE: String(UNAUTHENTICATED_PER_MINUTE) },
    });
  });

  after(async () => {
    await stack?.stop();
  });

  describe('request ids and logs', () => {
    it('carries one request id from the edge through both services, and echoes it', async () => {
      const reply = await get(`${stack.baseUrl}/v1/pets?limit=5`, { ...AUTH, 'x-request-id': 'trace-4f2a-9c1e' });
      expect(reply.status).to.equal(200);
      expect(reply.headers.get('x-request-id')).to.equal('trace-4f2a-9c1e');
      const gatewayLine = await stack.gateway.waitForLog((line) => line.requestId === 'trace-4f2a-9c1e');
      const petLine = await stack.petService.waitForLog((line) => line.requestId === 'trace-4f2a-9c1e');
      expect(gatewayLine).to.include({ method: 'GET', route: '/v1/pets', status: 200, keyId: 'demo-free', msg: 'request' });
      expect(gatewayLine.duration).to.be.a('number');
      expect(petLine).to.include({ method: 'ListPets', code: 'OK', level: 20 });
    });

    it('replaces an insane incoming request id with a generated one', async () => {
      for (const bad of ['<script>', 'a'.repeat(129), 'has space']) {
        const reply = await get(`${stack.baseUrl}/v1/pets`, { ...AUTH, 'x-request-id': bad });
        expect(reply.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
      }
    });

    it('generates a request id when none is sent, and logs one line per request', async () => {
      const reply = await get(`${stack.baseUrl}/v1/pets/999`);
      const id = reply.headers.get('x-request-id')!;
      expect(id).to.match(/^[0-9a-f-]{36}$/);
      const line = await stack.gateway.waitForLog((entry) => entry.requestId === id);
      expect(line).to.include({ route: '/v1/pets/:petId', status: 404 });
      expect(stack.gateway.logs.filter((entry) => entry.requestId === id)).to.have.length(1);
    });

    it('never logs the key or the Authorization header', async () => {
      await get(`${stack.baseUrl}/v1/pets`, { authorization: 'Bearer secret-guess-123' });
      await stack.gateway.waitForLog((entry) => entry.status === 401);
      const text = JSON.stringify(stack.gateway.logs);
      expect(text).to.not.include(KEY);
      expect(text).to.not.include('secret-guess-123');
      expect(text.toLowerCase()).to.not.include('authorization');
    });
  });

  describe('admin port', () => {
    it('serves Prometheus metrics for HTTP, gRPC client and process on the gateway', async () => {
      await get(`${stack.baseUrl}/v1/pets`);
      const metrics = (await get(`http://127.0.0.1:${stack.gateway.adminPort}/metrics`, {})).text;
      expect(metrics).to.match(/http_requests_total\{route="\/v1\/pets",method="GET",status="200"\} \d+/);
      expect(metrics).to.match(/http_request_duration_seconds_bucket\{le="[^"]+",route="\/v1\/pets",method="GET",status="200"\}/);
      expect(metrics).to.match(/grpc_client_handled_total\{method="ListPets",code="OK"\} \d+/);
      expect(metrics).to.include('grpc_client_handling_seconds_bucket');
      expect(metrics).to.match(/rate_limit_decisions_total\{plan="free",outcome="allowed"\} \d+/);
      expect(metrics).to.match(/rate_limiter_fallback 0/);
      expect(metrics).to.include('process_resident_memory_bytes');
    });

    it('counts every answered request and pet service call once, in the counter and the histogram alike', async () => {
      const metricsText = async () => (await get(`http://127.0.0.1:${stack.gateway.adminPort}/metrics`, {})).text;
      const value = (text: string, series: string) => Number(text.split('\n').find((line) => line.startsWith(`${series} `))?.slice(series.length + 1) ?? 0);
      const series = [
        'http_requests_total{route="/v1/pets",method="GET",status="200"}',
        'http_request_duration_seconds_count{route="/v1/pets",method="GET",status="200"}',
        'grpc_client_handled_total{method="ListPets",code="OK"}',
        'grpc_client_handling_seconds_count{method="ListPets",code="OK"}',
        'rate_limit_decisions_total{plan="free",outcome="allowed"}',
      ];
      const before = await metricsText();
      const ids = ['count-1', 'count-2', 'count-3'];
      for (const id of ids) expect((await get(`${stack.baseUrl}/v1/pets`, { ...AUTH, 'x-request-id': id })).status).to.equal(200);
      // Metrics are recorded with the request's log line, once its response has closed.
      for (const id of ids) await stack.gateway.waitForLog((entry) => entry.requestId === id);
      const after = await metricsText();
      expect(series.map((name) => value(after, name) - value(before, name))).to.deep.equal(series.map(() => 3));
    });

    it('serves gRPC server and store metrics on the pet service', async () => {
      await get(`${stack.baseUrl}/v1/pets`);
      const metrics = (await get(`http://127.0.0.1:${stack.petService.adminPort}/metrics`, {})).text;
      expect(metrics).to.match(/grpc_server_handled_total\{method="ListPets",code="OK"\} \d+/);
      expect(metrics).to.include('grpc_server_handling_seconds_bucket');
      expect(metrics).to.match(/pet_store_operations_total\{operation="list",outcome="ok"\} \d+/);
      expect(metrics).to.include('pet_store_operation_seconds_bucket');
      expect(metrics).to.include('process_resident_memory_bytes');
    });

    it('reports how many idempotency keys the embedded store remembers', async () => {
      const created = await fetch(`${stack.baseUrl}/v1/pets`, {
        method: 'POST',
        headers: { ...AUTH, 'content-type': 'application/json', 'idempotency-key': 'operations-metric' },
        body: '{"name":"Rex","categoryId":1}',
      });
      expect(created.status).to.equal(201);
      const metrics = (await get(`http://127.0.0.1:${stack.petService.adminPort}/metrics`, {})).text;
      expect(metrics).to.match(/^pet_store_idempotency_keys [1-9]\d*$/m);
    });

    it('keeps metrics and health off the public port', async () => {
      for (const path of ['/metrics', '/healthz', '/readyz']) expect((await get(`${stack.baseUrl}${path}`, {})).status).to.equal(404);
    });

    it('answers liveness and readiness without a key', async () => {
      expect((await get(`http://127.0.0.1:${stack.gateway.adminPort}/healthz`, {})).status).to.equal(200);
      const ready = await get(`http://127.0.0.1:${stack.gateway.adminPort}/readyz`, {});
      expect(ready.status, ready.text).to.equal(200);
      expect(JSON.parse(ready.text)).to.deep.equal({ status: 'ready', checks: { petService: 'ok' } });
      expect((await get(`http://127.0.0.1:${stack.petService.adminPort}/healthz`, {})).status).to.equal(200);
    });

    it('does no rate-limit accounting: more probes than the per-IP limit all answer 200', async () => {
      const admin = `http://127.0.0.1:${stack.gateway.adminPort}`;
      const decisions = async () =>
        (await get(`${admin}/metrics`, {})).text.split('\n').filter((line) => line.startsWith('rate_limit_decisions_total'));
      const before = await decisions();
      const statuses: number[] = [];
      for (let index = 0; index <= UNAUTHENTICATED_PER_MINUTE; index += 1) {
        for (const path of ['/healthz', '/readyz']) statuses.push((await get(`${admin}${path}`, {})).status);
      }
      expect(statuses).to.deep.equal(Array(2 * (UNAUTHENTICATED_PER_MINUTE + 1)).fill(200));
      expect(await decisions()).to.deep.equal(before);
    });
  });
});
