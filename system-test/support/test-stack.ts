import type { Server } from 'node:http';
import type { Logger } from 'pino';
import { createServer as createPetServer, type RunningServer, type ServerOptions } from '../../pet-service/src/server';
import { MemoryPetRepository } from '../../pet-service/src/store/memory-pet-repository';
import type { PetRepository } from '../../pet-service/src/store/pet-repository';
import { type ApiKeyDirectory, ApiKeyStore, sha256Hex } from '../../gateway/src/keys/api-keys';
import { createApp } from '../../gateway/src/app';
import { listen } from '../../gateway/src/http/http-server';
import type { GatewayMetrics } from '../../gateway/src/observability/metrics';
import { createPetClient, type PetClient } from '../../gateway/src/pet-service-client/pet-client';
import type { ProxyRoute } from '../../gateway/src/upstream/routes-file';
import type { CorsOrigins, TrustProxy } from '../../gateway/src/config';

/** Secrets of the keys every test stack knows, by plan; `enterprise` has limits no test reaches. */
export const TEST_KEYS = { free: 'test-free-secret', pro: 'test-pro-secret', enterprise: 'test-enterprise-secret' } as const;

export interface TestStack {
  readonly baseUrl: string;
  readonly petService: RunningServer;
  /** Sets the gateway's clock (milliseconds since the epoch). */
  setNow(now: number): void;
  close(): Promise<void>;
}

export interface TestStackOptions {
  readonly repository?: PetRepository;
  /** More settings of the pet service (its logger, metrics, bounds); default none. */
  readonly petService?: Partial<Omit<ServerOptions, 'host' | 'port' | 'repository'>>;
  readonly petClientTimeoutMs?: number;
  /** Point the gateway at this pet service instead of starting a real one. */
  readonly petServiceAddress?: string;
  /** The gateway's logger; default silent. */
  readonly logger?: Logger;
  /** The gateway's metrics; default none. */
  readonly metrics?: GatewayMetrics;
  /** The gateway's keys; default {@link TEST_KEYS}. */
  readonly apiKeys?: ApiKeyDirectory;
  /** Prefixes the gateway proxies to HTTP upstreams; default none. */
  readonly routes?: readonly ProxyRoute[];
  readonly trustProxy?: TrustProxy;
  /** The gateway drains from the start: every response closes its connection. */
  readonly draining?: boolean;
  /** CORS_ORIGINS; default none. */
  readonly corsOrigins?: CorsOrigins;
}

/** A real pet service and a real gateway, each on port 0, wired over gRPC. */
export async function startTestStack(options: TestStackOptions = {}): Promise<TestStack> {
  const petService = await createPetServer({
    host: '127.0.0.1',
    port: 0,
    repository: options.repository ?? new MemoryPetRepository(),
    pageTokenSecret: 'test-secret',
    ...options.petService,
  });
  const petClient: PetClient = createPetClient({
    target: options.petServiceAddress ?? `127.0.0.1:${petService.port}`,
    timeoutMs: options.petClientTimeoutMs ?? 2000,
    metrics: options.metrics,
  });
  const apiKeys = options.apiKeys ?? ApiKeyStore.fromDocument({
    keys: Object.entries(TEST_KEYS).map(([plan, secret]) => ({
      id: `test-${plan}`,
      sha256: sha256Hex(secret),
      plan,
      limits: plan === 'enterprise' ? { perMinute: 1e9, perDay: 1e9 } : undefined,
    })),
  });
  let now = Date.now();
  const app = createApp({
    petClient,
    apiKeys,
    now: () => now,
    logger: options.logger,
    metrics: options.metrics,
    routes: options.routes,
    trustProxy: options.trustProxy,
    corsOrigins: options.corsOrigins,
  });
  const { server, port, drain } = await listen(app, '127.0.0.1', 0);
  if (options.draining === true) drain();
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    petService,
    setNow: (value) => {
      now = value;
    },
    async close() {
      await closeServer(server);
      petClient.close();
      await petService.shutdown();
    },
  };
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/**
 * One test stack for the enclosing mocha suite, each test in a UTC minute of its own counted from
 * `start`, so no per-IP or per-key window carries over between tests. Returns the gateway's port,
 * readable once the suite's `before` has run: for tests that speak raw HTTP.
 */
export function useStackMinuteByMinute(start: number): () => number {
  let stack: TestStack | undefined;
  let port = 0;
  let minute = 0;
  before(async () => {
    stack = await startTestStack();
    port = Number(new URL(stack.baseUrl).port);
  });
  after(async () => {
    await stack?.close();
  });
  beforeEach(() => {
    minute += 1;
    stack!.setNow(start + minute * 60_000);
  });
  return () => port;
}
