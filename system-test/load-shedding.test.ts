import { request as httpRequest } from 'node:http';
import { status as Status } from '@grpc/grpc-js';
import { expect } from 'chai';
import { createMetrics as createGatewayMetrics } from '../gateway/src/observability/metrics';
import { createMetrics as createPetServiceMetrics } from '../pet-service/src/observability/metrics';
import type { PetServiceError } from '../pet-service/src/pets/pet-service-error';
import { capturedLogs } from './support/captured-logs';
import { HeldReadsRepository } from './support/held-reads';
import { fetchWithinContract } from './support/openapi-validator';
import { startTestStack, TEST_KEYS, type TestStack } from './support/test-stack';
import { waitFor } from './support/wait-for';

const AUTH = { authorization: `Bearer ${TEST_KEYS.enterprise}` };

/** A GET the test can abandon: the client goes away mid-call, as a browser tab closed or a client timeout. */
function abandonableGet(url: string): { abandon(): void; closed: Promise<void> } {
  const request = httpRequest(url, { headers: AUTH });
  const closed = new Promise<void>((resolve) => request.on('close', () => resolve()));
  request.on('error', () => undefined);
  request.end();
  return { abandon: () => request.destroy(), closed };
}

/** A counter's or gauge's samples as plain objects, labels and value. */
async function samples(registry: { getSingleMetric(name: string): { get(): Promise<{ values: Array<{ labels: object; value: number }> }> } | undefined }, name: string) {
  return (await registry.getSingleMetric(name)!.get()).values.map(({ labels, value }) => ({ ...labels, value }));
}

/**
 * Overload through a real gateway and a real pet service (in process, real HTTP and gRPC, port 0):
 * reads past the pet service's bound are shed at once with 503 and `Retry-After`, and a client
 * that goes away takes its work with it, whether that work was waiting for its turn or reading.
 */
describe('load shedding and cancellation (real gateway and pet service, a store held on cue)', function () {
  this.timeout(30_000);
  let repository: HeldReadsRepository;
  let stack: TestStack;
  const gatewayMetrics = createGatewayMetrics();
  const petServiceMetrics = createPetServiceMetrics();
  const petServiceLogs = capturedLogs('info');
  const gatewayLogs = capturedLogs('info');

  beforeEach(async () => {
    repository = new HeldReadsRepository();
    await repository.create({ name: 'Rex', categoryId: 1n, status: 'available' });
    petServiceLogs.lines.length = 0;
    gatewayLogs.lines.length = 0;
    gatewayMetrics.registry.resetMetrics();
    petServiceMetrics.registry.resetMetrics();
    stack = await startTestStack({
      repository,
      metrics: gatewayMetrics,
      logger: gatewayLogs.logger,
      petClientTimeoutMs: 10_000,
      petService: { maxConcurrentReads: 1, maxQueuedReads: 1, logger: petServiceLogs.logger, metrics: petServiceMetrics },
    });
  });

  afterEach(async () => {
    repository.release();
    await stack.close();
  });

  const petServiceCalls = () => samples(petServiceMetrics.registry, 'grpc_server_handled_total');
  const readsQueued = async () => (await samples(petServiceMetrics.registry, 'pet_store_reads_queued'))[0]?.value;

  it('a client that goes away mid-read: the gateway cancels its call and the pet service stops the store read', async () => {
    const get = abandonableGet(`${stack.baseUrl}/v1/pets/1`);
    await waitFor(() => repository.started === 1, 5000);
    get.abandon();
    await get.closed;

    await waitFor(() => repository.aborted.length === 1, 5000);
    expect((repository.aborted[0] as PetServiceError).code, 'the read was stopped as CANCELLED').to.equal(Status.CANCELLED);
    await waitFor(async () => (await petServiceCalls()).length > 0, 5000);
    expect(await petServiceCalls()).to.deep.equal([{ method: 'GetPet', code: 'CANCELLED', value: 1 }]);
    expect(await samples(petServiceMetrics.registry, 'pet_store_operations_total')).to.deep.include({ operation: 'get', outcome: 'cancelled', value: 1 });
    expect(petServiceLogs.lines.filter((line) => line.msg === 'grpc call').map((line) => line.code)).to.deep.equal(['CANCELLED']);
    expect(await samples(gatewayMetrics.registry, 'grpc_client_handled_total')).to.deep.include({ method: 'GetPet', code: 'CANCELLED', value: 1 });
    expect(gatewayLogs.lines.map((line) => line.msg), 'logged as aborted, and no error').to.deep.equal(['request aborted']);
  });

  it('refuses a read past the bound at once with 503 and Retry-After, counts it, and serves the admitted ones', async () => {
    const first = fetchWithinContract(`${stack.baseUrl}/v1/pets?limit=5`, { headers: AUTH });
    await waitFor(() => repository.started === 1, 5000);
    const second = fetchWithinContract(`${stack.baseUrl}/v1/pets/1`, { headers: AUTH });
    await waitFor(async () => (await readsQueued()) === 1, 5000);

    const shed = await fetchWithinContract(`${stack.baseUrl}/v1/pets?limit=5`, { headers: AUTH });
    expect(shed.status).to.equal(503);
    expect(shed.headers.get('retry-after')).to.equal('1');
    expect(await shed.json()).to.deep.equal({ code: 'service_unavailable', message: 'pet service is over capacity; retry later', status: 503 });
    expect(repository.started, 'the refused read never reached the store').to.equal(1);
    expect(await samples(gatewayMetrics.registry, 'http_requests_shed_total')).to.deep.equal([{ route: '/v1/pets', method: 'GET', value: 1 }]);
    expect(await samples(gatewayMetrics.registry, 'grpc_client_handled_total')).to.deep.include({ method: 'ListPets', code: 'RESOURCE_EXHAUSTED', value: 1 });

    repository.release();
    expect((await first).status).to.equal(200);
    expect((await second).status).to.equal(200);
    expect(repository.started).to.equal(2);
  });

  it('a client that goes away while its read waits for a turn: the read leaves the queue and never runs', async () => {
    const first = fetchWithinContract(`${stack.baseUrl}/v1/pets/1`, { headers: AUTH });
    await waitFor(() => repository.started === 1, 5000);
    const waiting = abandonableGet(`${stack.baseUrl}/v1/pets?limit=5`);
    await waitFor(async () => (await readsQueued()) === 1, 5000);
    waiting.abandon();
    await waiting.closed;

    await waitFor(async () => (await readsQueued()) === 0, 5000);
    await waitFor(async () => (await petServiceCalls()).length > 0, 5000);
    expect(await petServiceCalls()).to.deep.equal([{ method: 'ListPets', code: 'CANCELLED', value: 1 }]);
    repository.release();
    expect((await first).status).to.equal(200);
    expect(repository.started, 'the abandoned read never reached the store').to.equal(1);
    expect(repository.aborted).to.deep.equal([]);
  });
});
