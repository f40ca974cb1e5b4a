import { status as Status } from '@grpc/grpc-js';
import { expect } from 'chai';
import { fetchWithinContract } from './support/openapi-validator';
import { type ScriptedPetService, startScriptedPetService } from './support/scripted-pet-service';
import { startTestStack, TEST_KEYS, type TestStack } from './support/test-stack';

const AUTH = { authorization: `Bearer ${TEST_KEYS.free}` };

describe('pet-service refusals over HTTP (real gateway, scripted gRPC pet service)', () => {
  let scripted: ScriptedPetService;
  let stack: TestStack;

  before(async () => {
    scripted = await startScriptedPetService({
      listPets: () => ({ fail: Status.RESOURCE_EXHAUSTED }),
      getPet: () => ({ fail: Status.PERMISSION_DENIED }),
    });
    stack = await startTestStack({ petServiceAddress: `127.0.0.1:${scripted.port}` });
  });
  after(async () => {
    await stack.close();
    await scripted.close();
  });

  it('answers RESOURCE_EXHAUSTED with 429 rate_limited and Retry-After: 1, leaving the key its quota', async () => {
    const response = await fetchWithinContract(`${stack.baseUrl}/v1/pets`, { headers: AUTH });
    expect(response.status).to.equal(429);
    expect(await response.json()).to.deep.equal({ code: 'rate_limited', message: 'pet service is over capacity', status: 429 });
    expect(response.headers.get('retry-after')).to.equal('1');
    expect(response.headers.get('x-ratelimit-remaining'), 'the key itself is not limited').to.equal('59');
  });

  it('answers PERMISSION_DENIED with 403 forbidden, as the document lists it', async () => {
    const response = await fetchWithinContract(`${stack.baseUrl}/v1/pets/1`, { headers: AUTH });
    expect(response.status).to.equal(403);
    expect(await response.json()).to.deep.equal({ code: 'forbidden', message: 'permission denied', status: 403 });
    expect(response.headers.get('deprecation'), 'getPet marks its own errors deprecated too').to.match(/^@\d+$/);
  });
});
