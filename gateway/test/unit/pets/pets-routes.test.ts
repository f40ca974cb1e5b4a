import { expect } from 'chai';
import { NON_RECORDING_TRACER } from '@petstore/runtime';
import type { RequestContext } from '../../../src/edge/request-context';
import type { PetClient } from '../../../src/pet-service-client/pet-client';
import { createPetsRoutes } from '../../../src/pets/pets-routes';
import { listenOnLoopback, type LoopbackServer } from '../../../../system-test/support/loopback-server';

describe('pets routes', () => {
  let server: LoopbackServer;
  let base: string;
  let context: RequestContext;
  let unserved: string[];

  beforeEach(async () => {
    unserved = [];
    const routes = createPetsRoutes({ petClient: {} as PetClient, now: () => 0, onInternalError: () => undefined });
    server = await listenOnLoopback((request, response) => {
      context = { requestId: 'r', startedAt: 0n, span: NON_RECORDING_TRACER.startSpan('request'), key: undefined, route: undefined, cancel: undefined };
      const path = new URL(request.url!, 'http://x').pathname;
      if (!routes.serve(request, response, context, path)) {
        unserved.push(path);
        response.end();
      }
    });
    base = server.base;
  });
  afterEach(() => server.close());

  it('names petId when it cannot be percent-decoded, whatever the method, as express does', async () => {
    for (const method of ['GET', 'DELETE']) {
      const response = await fetch(`${base}/v1/pets/%E0`, { method });
      expect(response.status).to.equal(400);
      expect(await response.json()).to.deep.equal({ code: 'invalid_request', message: 'petId: malformed percent-encoding', status: 400 });
      expect(response.headers.get('deprecation')).to.equal(null);
      expect(context.route).to.equal('/v1/pets/:petId');
    }
  });

  it('matches paths as express does: any case, one trailing slash', async () => {
    const response = await fetch(`${base}/V1/Pets/0/`);
    expect(response.status).to.equal(400);
    expect(await response.json()).to.include({ message: 'petId: must be a positive int64' });
    expect(response.headers.get('deprecation')).to.match(/^@\d+$/);
    const list = await fetch(`${base}/v1/pets/`, { method: 'PUT' });
    expect(list.status).to.equal(405);
    expect(list.headers.get('allow')).to.equal('GET, HEAD, POST');
  });

  it('leaves a path no route matches to the caller', async () => {
    for (const path of ['/v1/pets/%E0/owner', '/v1/pets//', '/v1/petsx', '/v1/pets/1/2']) await (await fetch(`${base}${path}`)).text();
    expect(unserved).to.deep.equal(['/v1/pets/%E0/owner', '/v1/pets//', '/v1/petsx', '/v1/pets/1/2']);
  });
});
