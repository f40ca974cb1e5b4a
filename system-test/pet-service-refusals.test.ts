import { status as Status } from '@grpc/grpc-js';
import { expect } from 'chai';
import { fetchWithinContract } from './support/openapi-validator';
import { type ScriptedPetService, startScriptedPetService } from './support/scripted-pet-service';
import { createMetrics } from '../gateway/src/observability/metrics';
import { MongoPetRepository } from '../pet-service/src/store/mongo-pet-repository';
import { everyWriteLoses, type FakeReplicaMember, startFakeReplicaMember } from './support/fake-replica-member';
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

describe('a change that keeps losing its conditional write (real gateway and pet service, a scripted MongoDB member)', () => {
  // The pet as the member answers every read of it; every write of it matches nothing.
  const PET = { _id: 7n, name: 'Rex', categoryId: 1n, status: 'available', version: 3 };
  let member: FakeReplicaMember;
  let stack: TestStack;
  const metrics = createMetrics();

  before(async () => {
    member = await startFakeReplicaMember(everyWriteLoses(PET));
    const repository = await MongoPetRepository.connect({ uri: member.uri, database: 'petstore', timeoutMs: 2000 });
    stack = await startTestStack({ repository, metrics });
  });
  after(async () => {
    await stack?.close();
    await member?.close();
  });

  const writes = (name: 'findAndModify' | 'delete') => member.commands.filter((command) => command[name] === 'pets').length;
  const shedCount = async () => (await metrics.httpRequestsShed.get()).values.reduce((sum, { value }) => sum + value, 0);

  // RFC 9110 section 15.5.13: 412 is for a condition in the request that evaluated false. Without
  // If-Match, or with one that matched every time, no condition failed: the pet service's ABORTED
  // without a current etag is contention, which a retry later can get past.
  for (const [label, headers] of [
    ['without If-Match', {}],
    ['with an If-Match that matches', { 'if-match': '"3"' }],
  ] as const) {
    it(`PATCH ${label}: 503 service_unavailable with Retry-After: 1, not 412, after the store's attempts; not counted as shed`, async () => {
      const [writesBefore, shedBefore] = [writes('findAndModify'), await shedCount()];
      const response = await fetchWithinContract(`${stack.baseUrl}/v1/pets/7`, {
        method: 'PATCH',
        headers: { ...AUTH, 'content-type': 'application/merge-patch+json', ...headers },
        body: JSON.stringify({ name: 'Max' }),
      });
      expect(response.status).to.equal(503);
      expect(await response.json()).to.deep.equal({ code: 'service_unavailable', message: 'the pet kept changing while this change was tried; retry later', status: 503 });
      expect(response.headers.get('retry-after')).to.equal('1');
      expect(response.headers.get('etag')).to.equal(null);
      expect(writes('findAndModify') - writesBefore, 'the store tried, each time against the pet as it was').to.equal(8);
      expect(await shedCount()).to.equal(shedBefore);
    });
  }

  it('DELETE without If-Match: 503 service_unavailable with Retry-After: 1, not 412', async () => {
    const writesBefore = writes('delete');
    const response = await fetchWithinContract(`${stack.baseUrl}/v1/pets/7`, { method: 'DELETE', headers: AUTH });
    expect(response.status).to.equal(503);
    expect(await response.json()).to.deep.include({ code: 'service_unavailable', status: 503 });
    expect(response.headers.get('retry-after')).to.equal('1');
    expect(writes('delete') - writesBefore).to.equal(8);
  });

  it('PATCH with a stale If-Match is still 412 with the current ETag: that condition did evaluate false', async () => {
    const response = await fetchWithinContract(`${stack.baseUrl}/v1/pets/7`, {
      method: 'PATCH',
      headers: { ...AUTH, 'content-type': 'application/merge-patch+json', 'if-match': '"2"' },
      body: JSON.stringify({ name: 'Max' }),
    });
    expect(response.status).to.equal(412);
    expect(response.headers.get('etag')).to.equal('"3"');
    expect(await response.json()).to.deep.include({ code: 'precondition_failed' });
  });
});
