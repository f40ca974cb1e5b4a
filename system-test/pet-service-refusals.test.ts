import { status as Status } from '@grpc/grpc-js';
import { expect } from 'chai';
import { fetchWithinContract } from './support/openapi-validator';
import { type ScriptedPetService, startScriptedPetService } from './support/scripted-pet-service';
import { createMetrics } from '../gateway/src/observability/metrics';
import { startTestStack, TEST_KEYS, type TestStack } from './support/test-stack';

const AUTH = { authorization: `Bearer ${TEST_KEYS.free}` };

describe('pet-service refusals over HTTP (real gateway, scripted gRPC pet service)', () => {
  let scripted: ScriptedPetService;
  let stack: TestStack;
  const metrics = createMetrics();

  before(async () => {
    scripted = await startScriptedPetService({
      listPets: () => ({ fail: Status.RESOURCE_EXHAUSTED }),
      getPet: () => ({ fail: Status.PERMISSION_DENIED }),
      // What the pet service answers when its store did not answer in time: not to be retried.
      createPet: () => ({ fail: Status.UNAVAILABLE, pushbackMs: '-1' }),
    });
    stack = await startTestStack({ petServiceAddress: `127.0.0.1:${scripted.port}`, metrics });
  });
  after(async () => {
    await stack.close();
    await scripted.close();
  });

  it('answers RESOURCE_EXHAUSTED (shed) with 503 service_unavailable and Retry-After: 1, counts it, and asks once', async () => {
    const response = await fetchWithinContract(`${stack.baseUrl}/v1/pets`, { headers: AUTH });
    expect(response.status).to.equal(503);
    expect(await response.json()).to.deep.equal({ code: 'service_unavailable', message: 'pet service is over capacity; retry later', status: 503 });
    expect(response.headers.get('retry-after')).to.equal('1');
    expect(response.headers.get('x-ratelimit-remaining'), 'the key itself is not limited').to.equal('59');
    expect(scripted.calls.listPets, 'a shed call is never retried').to.equal(1);
    const shed = await metrics.httpRequestsShed.get();
    expect(shed.values.map(({ labels, value }) => ({ ...labels, value }))).to.deep.equal([{ route: '/v1/pets', method: 'GET', value: 1 }]);
  });

  it('answers UNAVAILABLE (a store that did not answer in time) with 503 service_unavailable and Retry-After: 1, as every 503, not counted as shed', async () => {
    const before = (await metrics.httpRequestsShed.get()).values.reduce((sum, { value }) => sum + value, 0);
    const response = await fetchWithinContract(`${stack.baseUrl}/v1/pets`, {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Rex', categoryId: 1 }),
    });
    expect(response.status).to.equal(503);
    expect(await response.json()).to.deep.equal({ code: 'service_unavailable', message: 'pet service unavailable', status: 503 });
    expect(response.headers.get('retry-after')).to.equal('1');
    expect((await metrics.httpRequestsShed.get()).values.reduce((sum, { value }) => sum + value, 0)).to.equal(before);
  });

  it('answers PERMISSION_DENIED with 403 forbidden, as the document lists it', async () => {
    const response = await fetchWithinContract(`${stack.baseUrl}/v1/pets/1`, { headers: AUTH });
    expect(response.status).to.equal(403);
    expect(await response.json()).to.deep.equal({ code: 'forbidden', message: 'permission denied', status: 403 });
    expect(response.headers.get('deprecation'), 'getPet marks its own errors deprecated too').to.match(/^@\d+$/);
  });
});
