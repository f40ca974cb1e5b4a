import { expect } from 'chai';
import { startAdminServer } from '../../src/observability/admin-server';
import { createMetrics } from '../../src/observability/metrics';
import { createServer } from '../../src/server';
import { MemoryPetRepository } from '../../src/store/memory-pet-repository';

describe('pet service admin port: /readyz follows the gRPC health of the whole server (for probes that cannot speak TLS)', () => {
  it('answers 200 while SERVING, 503 once draining; /healthz stays 200', async () => {
    const metrics = createMetrics();
    const server = await createServer({ host: '127.0.0.1', port: 0, repository: new MemoryPetRepository(), pageTokenSecret: 's', metrics });
    const admin = await startAdminServer(metrics.registry, '127.0.0.1', 0, () => server.health.status('') === 'SERVING');
    const get = async (path: string): Promise<[number, unknown]> => {
      const response = await fetch(`http://127.0.0.1:${admin.port}${path}`);
      return [response.status, await response.json()];
    };
    try {
      expect(await get('/readyz')).to.deep.equal([200, { status: 'ready' }]);
      server.drain();
      expect(await get('/readyz')).to.deep.equal([503, { status: 'not_serving' }]);
      expect(await get('/healthz')).to.deep.equal([200, { status: 'ok' }]);
      expect(server.health.status('petstore.v1.PetService'), 'the service keeps its store status while draining').to.equal('SERVING');
    } finally {
      await admin.close();
      await server.shutdown();
    }
  });
});
