import { createUnaryTransport } from '@petstore/proto';
import { expect } from 'chai';
import { MongoPetRepository } from '../pet-service/src/store/mongo-pet-repository';
import { petServiceHealthCheck } from '../gateway/src/pet-service-client/readiness';
import { startMongoOrSkip, skipUnlessControllable, type MongoServer } from './support/mongo-server';
import { expectMatchesContract } from './support/openapi-validator';
import { startTestStack, TEST_KEYS, type TestStack } from './support/test-stack';
import { waitFor } from './support/wait-for';

const AUTH = { authorization: `Bearer ${TEST_KEYS.enterprise}` };

describe('gateway and pet service while MongoDB is unreachable (real FerretDB, stopped and restarted)', function () {
  this.timeout(60_000);
  let server: MongoServer;
  let stack: TestStack;

  before(async function () {
    server = await startMongoOrSkip(this);
    skipUnlessControllable(server, this);
    // The pet service's defaults: a store limit below the gateway's 2 s deadline.
    const repository = await MongoPetRepository.connect({ uri: server.uri, database: server.freshDatabase(), timeoutMs: 1000 });
    stack = await startTestStack({ repository });
  });

  after(async () => {
    await stack?.close();
    await server?.close();
  });

  async function send(method: 'GET' | 'POST', path: string): Promise<{ status: number; body: unknown }> {
    const init: RequestInit =
      method === 'POST'
        ? { method, headers: { ...AUTH, 'content-type': 'application/json' }, body: '{"name":"Rex","categoryId":1}' }
        : { method, headers: AUTH };
    const response = await fetch(stack.baseUrl + path, init);
    const text = await response.text();
    const template = path.startsWith('/v1/pets/') ? '/pets/{petId}' : '/pets';
    return { status: response.status, body: expectMatchesContract(method === 'GET' ? 'get' : 'post', template, { status: response.status, headers: response.headers, text }) };
  }

  it('answers 503 service_unavailable, turns health NOT_SERVING, and recovers with nothing lost', async () => {
    const created = await send('POST', '/v1/pets');
    expect(created.status).to.equal(201);
    const id = (created.body as { id: number }).id;
    const transport = createUnaryTransport(`127.0.0.1:${stack.petService.port}`);
    const health = petServiceHealthCheck(transport, 2000);

    await server.stop();
    for (const [method, path] of [['GET', '/v1/pets'], ['POST', '/v1/pets'], ['GET', `/v1/pets/${id}`]] as const) {
      const reply = await send(method, path);
      expect(reply.status, `${method} ${path}`).to.equal(503);
      expect(reply.body).to.deep.equal({ code: 'service_unavailable', message: 'pet service unavailable', status: 503 });
    }
    expect(await stack.petService.storeHealth.probe()).to.equal(false);
    const notServing = await health().then(() => 'SERVING', (error: Error) => error.message);
    expect(notServing).to.match(/NOT_SERVING/);

    await server.restart();
    await waitFor(() => stack.petService.storeHealth.probe(), 15_000);
    await health();
    const listed = await send('GET', '/v1/pets');
    expect(listed.status).to.equal(200);
    expect((listed.body as Array<{ id: number }>).map((pet) => pet.id)).to.deep.equal([id]);
    expect((await send('POST', '/v1/pets')).status).to.equal(201);
    transport.close();
  });
});
