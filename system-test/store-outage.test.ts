import { expect } from 'chai';
import pino from 'pino';
import { MemoryPetRepository } from '../pet-service/src/store/memory-pet-repository';
import { createServer as createPetServer } from '../pet-service/src/server';
import { createAdminApp } from '../gateway/src/admin/admin-app';
import { closeGracefully, listen } from '../gateway/src/http/http-server';
import { MemoryRateLimiter } from '../gateway/src/rate-limit/memory-rate-limiter';
import { createMetrics } from '../gateway/src/observability/metrics';
import { createPetClient } from '../gateway/src/pet-service-client/pet-client';
import { petServiceHealthCheck } from '../gateway/src/pet-service-client/readiness';

describe('store outage: pet store -> pet-service health -> gateway /readyz', () => {
  it('answers 503 naming the pet service NOT_SERVING while its store is unreachable, and 200 once it is back', async () => {
    let reachable = false;
    const memory = new MemoryPetRepository();
    const repository = Object.assign(Object.create(memory) as MemoryPetRepository, {
      ping: async () => {
        if (!reachable) throw new Error('store unreachable');
      },
    });
    // Probes are driven by the test (probe()), not by the interval, so nothing waits on a timer.
    const petService = await createPetServer({
      host: '127.0.0.1',
      port: 0,
      repository,
      pageTokenSecret: 's',
      storeHealthIntervalMs: 3_600_000,
    });
    const petClient = createPetClient({ target: `127.0.0.1:${petService.port}`, timeoutMs: 2000 });
    const admin = createAdminApp({
      registry: createMetrics().registry,
      readinessChecks: { petService: petServiceHealthCheck(petClient.transport, 2000) },
      draining: () => false,
      limiter: new MemoryRateLimiter({ now: Date.now }),
      logger: pino({ level: 'silent' }),
    });
    const { server, port } = await listen(admin, '127.0.0.1', 0);
    const readyz = async () => {
      const response = await fetch(`http://127.0.0.1:${port}/readyz`);
      return { status: response.status, body: (await response.json()) as unknown };
    };
    try {
      expect(await petService.storeHealth.probe()).to.equal(false);
      expect(await readyz()).to.deep.equal({
        status: 503,
        body: { status: 'not_ready', checks: { petService: 'pet service is NOT_SERVING' } },
      });

      reachable = true;
      expect(await petService.storeHealth.probe()).to.equal(true);
      expect(await readyz()).to.deep.equal({ status: 200, body: { status: 'ready', checks: { petService: 'ok' } } });
    } finally {
      await closeGracefully(server);
      petClient.close();
      await petService.shutdown();
    }
  });
});
