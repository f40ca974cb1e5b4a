import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { stringify } from 'yaml';
import { sha256Hex } from '../gateway/src/keys/api-keys';
import { freePort, type RedisServer, startRedisOrSkip } from './support/redis-server';
import { type ServiceProcess, startService } from './support/service-process';
import { pollEndpoints } from './support/endpoints';

/**
 * A Deployment's rolling update, played on loopback: 2 gateways sharing a real Redis, 2 pet-service
 * replicas the gateways balance over (round_robin), steady load, and every process restarted one
 * at a time on its own ports. The test plays the Service: it sends only to gateways whose /readyz
 * answered 200 at its last poll, as endpoints would.
 *
 * Run twice: with a simulated preStop pause (the gateway leaves the endpoints 1 s before its
 * SIGTERM, and SHUTDOWN_DELAY_MS is 0), and with the drain delay alone (SIGTERM at once; the
 * gateway leaves the endpoints when /readyz fails, and keeps serving for SHUTDOWN_DELAY_MS).
 */
const LOAD_KEY = 'rollout-load';
const PRESTOP_PAUSE_MS = 1000;
const DRAIN_DELAY_MS = 1000;
/** Endpoint propagation in the test: far below the drain delay, as it must be in a cluster. */
const READINESS_POLL_MS = 50;
const READINESS_FAILURE_THRESHOLD = 3;
const READINESS_TIMEOUT_MS = 1000;
const LOAD_WORKERS = 8;

interface Outcome {
  readonly total: number;
  readonly failures: readonly string[];
}

interface Rollout {
  readonly mode: 'preStop pause' | 'drain delay';
  readonly shutdownDelayMs: number;
  readonly preStopPauseMs: number;
}

describe('a rolling restart of every process under load (2 gateways on one Redis, 2 pet services)', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let keysFile: string;

  before(async function () {
    redis = await startRedisOrSkip(this);
    keysFile = join(mkdtempSync(join(tmpdir(), 'rollout-')), 'keys.yaml');
    const limited = (id: string) => ({ id, sha256: sha256Hex(`secret-${id}`), plan: 'enterprise', limits: { perMinute: 1000, perDay: 30 } });
    writeFileSync(
      keysFile,
      stringify({
        keys: [
          { id: LOAD_KEY, sha256: sha256Hex(`secret-${LOAD_KEY}`), plan: 'enterprise', limits: { perMinute: 1e9, perDay: 1e9 } },
          limited('exact-preStop'),
          limited('exact-drain'),
        ],
      }),
    );
  });
  after(async () => {
    await redis?.stop();
  });

  for (const rollout of [
    { mode: 'preStop pause', shutdownDelayMs: 0, preStopPauseMs: PRESTOP_PAUSE_MS },
    { mode: 'drain delay', shutdownDelayMs: DRAIN_DELAY_MS, preStopPauseMs: 0 },
  ] as const satisfies readonly Rollout[]) {
    it(`loses no request, and keeps limits exact, with the ${rollout.mode}`, async () => {
      const cluster = await startCluster(redis.url, keysFile, rollout.shutdownDelayMs);
      try {
        const load = startLoad(cluster);
        await cluster.restartPetServices();
        await cluster.restartGateways(rollout.preStopPauseMs);
        const outcome = await load.stop();
        console.log(`      ${rollout.mode}: ${outcome.total} requests during the rollout, ${outcome.failures.length} failed`);
        expect([...new Set(outcome.failures)], `failed requests (${outcome.failures.length})`).to.deep.equal([]);
        expect(outcome.total, 'requests sent during the rollout').to.be.above(200);

        // Exact across both new gateways: a key with 30 a day gets exactly 30, counted down in order.
        const keyId = rollout.mode === 'preStop pause' ? 'exact-preStop' : 'exact-drain';
        const remaining: string[] = [];
        for (let index = 0; index < 30; index += 1) {
          const response = await fetch(`${cluster.urls()[index % 2]}/v1/pets?limit=1`, { headers: { Authorization: `Bearer secret-${keyId}` } });
          expect(response.status).to.equal(200);
          remaining.push(response.headers.get('x-ratelimit-remaining')!);
        }
        expect(remaining).to.deep.equal(Array.from({ length: 30 }, (_, index) => String(29 - index)));
        const over = await fetch(`${cluster.urls()[0]}/v1/pets?limit=1`, { headers: { Authorization: `Bearer secret-${keyId}` } });
        expect(over.status).to.equal(429);
      } finally {
        await cluster.stop();
      }
    });
  }
});

interface Cluster {
  /** The gateways in the endpoints: ready at the last poll, and not being taken out. */
  endpoints(): readonly number[];
  urls(): readonly string[];
  restartPetServices(): Promise<void>;
  restartGateways(preStopPauseMs: number): Promise<void>;
  stop(): Promise<void>;
}

async function startCluster(redisUrl: string, keysFile: string, shutdownDelayMs: number): Promise<Cluster> {
  const petPorts = await Promise.all([0, 1].map(async () => ({ port: await freePort(), adminPort: await freePort() })));
  const gatewayPorts = await Promise.all([0, 1].map(async () => ({ port: await freePort(), adminPort: await freePort() })));
  const common = { SHUTDOWN_DELAY_MS: String(shutdownDelayMs), SHUTDOWN_TIMEOUT_MS: '5000' };
  const startPet = (index: number): Promise<ServiceProcess> =>
    startService('pet-service', {
      ...common,
      // Fast successful calls are logged at debug; the restart waits for them (served() below).
      LOG_LEVEL: 'debug',
      PET_SERVICE_HOST: '127.0.0.1',
      PET_SERVICE_PORT: String(petPorts[index]!.port),
      ADMIN_PORT: String(petPorts[index]!.adminPort),
    });
  const startGateway = (index: number): Promise<ServiceProcess> =>
    startService('gateway', {
      ...common,
      HOST: '127.0.0.1',
      PORT: String(gatewayPorts[index]!.port),
      ADMIN_PORT: String(gatewayPorts[index]!.adminPort),
      REDIS_URL: redisUrl,
      // Exactness is checked afterwards: a Redis reply slowed past the default 200 ms by a loaded
      // machine would be counted in the fallback's memory instead (see gateway-replicas).
      REDIS_COMMAND_TIMEOUT_MS: '2000',
      API_KEYS_FILE: keysFile,
      PET_SERVICE_ADDR: `ipv4:${petPorts.map(({ port }) => `127.0.0.1:${port}`).join(',')}`,
    });
  // Whatever started is stopped if the rest does not: a failed `before` leaves no process running.
  const started: ServiceProcess[] = [];
  const startBoth = async (start: (index: number) => Promise<ServiceProcess>): Promise<ServiceProcess[]> => {
    const starts = await Promise.allSettled([0, 1].map(start));
    started.push(...starts.flatMap((each) => (each.status === 'fulfilled' ? [each.value] : [])));
    const failed = starts.find((each) => each.status === 'rejected');
    if (failed === undefined) return started.slice(-2);
    await Promise.all(started.map((service) => service.stop('SIGKILL')));
    throw failed.reason;
  };
  const pets = await startBoth(startPet);
  const gateways = await startBoth(startGateway);

  // The Service's endpoints: a gateway joins on a 200 from /readyz and leaves on any other answer.
  const endpoints = pollEndpoints(() => gatewayPorts.map(({ adminPort }) => adminPort), {
    pollMs: READINESS_POLL_MS,
    failureThreshold: READINESS_FAILURE_THRESHOLD,
    timeoutMs: READINESS_TIMEOUT_MS,
  });
  try {
    await Promise.all([0, 1].map((index) => endpoints.becameReady(index)));
  } catch (error) {
    await endpoints.stop();
    await Promise.all(started.map((service) => service.stop('SIGKILL')));
    throw error;
  }

  const served = (pet: ServiceProcess, gateway: number) => (line: Record<string, unknown>) =>
    line.msg === 'grpc call' && String(line.requestId).startsWith(`g${gateway}-`);

  return {
    endpoints: () => endpoints.ready(),
    urls: () => gatewayPorts.map(({ port }) => `http://127.0.0.1:${port}`),
    async restartPetServices() {
      for (const index of [0, 1]) {
        expect(await pets[index]!.stop('SIGTERM'), `pet service ${index} exit code`).to.equal(0);
        pets[index] = await startPet(index);
        // Like a readiness gate: the next replica goes only once both gateways call this one again.
        const pet = pets[index]!;
        await Promise.all([0, 1].map((gateway) => pet.waitForLog(served(pet, gateway), 10_000)));
      }
    },
    async restartGateways(preStopPauseMs) {
      for (const index of [0, 1]) {
        // With a preStop pause the pod leaves the endpoints first, and its replacement joins
        // them once ready; without one, only its failing /readyz takes it out.
        if (preStopPauseMs > 0) {
          endpoints.takeOut(index);
          await new Promise((resolve) => setTimeout(resolve, preStopPauseMs));
        }
        expect(await gateways[index]!.stop('SIGTERM'), `gateway ${index} exit code`).to.equal(0);
        gateways[index] = await startGateway(index);
        await endpoints.becameReady(index);
        endpoints.putBack(index);
      }
    },
    async stop() {
      await endpoints.stop();
      await Promise.all([...gateways, ...pets].map((service) => service.stop()));
    },
  };
}

/**
 * Steady load over the endpoints: list and create, each request sent to the next gateway in the
 * endpoints, with a request id naming that gateway (`g<index>-<n>`). Any 5xx, any other unexpected
 * status and any connection error is a failure.
 */
function startLoad(cluster: Cluster): { stop(): Promise<Outcome> } {
  let running = true;
  let total = 0;
  let sequence = 0;
  const failures: string[] = [];
  const worker = async (): Promise<void> => {
    while (running) {
      const endpoints = cluster.endpoints();
      if (endpoints.length === 0) {
        failures.push('no gateway in the endpoints');
        await new Promise((resolve) => setTimeout(resolve, 10));
        continue;
      }
      const n = sequence++;
      const gateway = endpoints[n % endpoints.length]!;
      const create = n % 4 === 0;
      const headers: Record<string, string> = { Authorization: `Bearer secret-${LOAD_KEY}`, 'X-Request-Id': `g${gateway}-${n}` };
      if (create) headers['Content-Type'] = 'application/json';
      total += 1;
      try {
        const response = await fetch(`${cluster.urls()[gateway]}/v1/pets${create ? '' : '?limit=5'}`, {
          method: create ? 'POST' : 'GET',
          headers,
          body: create ? JSON.stringify({ name: `pet ${n}`, categoryId: 1 }) : undefined,
        });
        await response.arrayBuffer();
        if (response.status !== (create ? 201 : 200)) failures.push(`${create ? 'POST' : 'GET'} via gateway ${gateway}: ${response.status}`);
      } catch (error) {
        failures.push(`${create ? 'POST' : 'GET'} via gateway ${gateway}: ${(error as Error).message} (${String((error as Error).cause)})`);
      }
    }
  };
  const workers = Array.from({ length: LOAD_WORKERS }, worker);
  return {
    async stop() {
      running = false;
      await Promise.all(workers);
      return { total, failures };
    },
  };
}
