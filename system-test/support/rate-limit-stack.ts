import type { Server } from 'node:http';
import pino from 'pino';
import { Registry } from 'prom-client';
import { MemoryPetRepository } from '../../pet-service/src/store/memory-pet-repository';
import { createServer as createPetServer, type RunningServer } from '../../pet-service/src/server';
import { createAdminApp } from '../../gateway/src/admin/admin-app';
import { ApiKeyStore, sha256Hex } from '../../gateway/src/keys/api-keys';
import { createApp } from '../../gateway/src/app';
import type { CorsOrigins, TrustProxy } from '../../gateway/src/config';
import { listen } from '../../gateway/src/http/http-server';
import { MemoryRateLimiter } from '../../gateway/src/rate-limit/memory-rate-limiter';
import { createPetClient } from '../../gateway/src/pet-service-client/pet-client';
import type { Limits, PlanName } from '../../gateway/src/rate-limit/plans';
import { DEFAULT_RATE_LIMIT_SETTINGS, type RateLimitSettings } from '../../gateway/src/rate-limit/rate-limit-policy';
import type { RateLimiter, UsageScope } from '../../gateway/src/rate-limit/rate-limiter';
import { fetchWithinContract } from './openapi-validator';

/** A key the stack knows: its secret is `secret-<id>`. */
export interface StackKey {
  readonly id: string;
  readonly plan: PlanName;
  readonly limits?: Partial<Limits>;
}

export interface RateLimitStackOptions {
  readonly keys: readonly StackKey[];
  /** Default: in-memory counters on the stack's clock. */
  readonly limiter?: (now: () => number) => RateLimiter;
  readonly rateLimits?: RateLimitSettings;
  readonly trustProxy?: TrustProxy;
  /** Start of the stack's clock, ms since the epoch. */
  readonly startAt?: number;
  /** CORS_ORIGINS; default none. */
  readonly corsOrigins?: CorsOrigins;
  /** What `GET /admin/usage` says the limiter's figures cover; default `replica`, as in memory. */
  readonly usageScope?: UsageScope;
  /** ADMIN_TOKEN; default none (loopback clients only). */
  readonly adminToken?: string;
}

/** A real pet service and a real gateway (public and admin listeners), in this process, on port 0. */
export interface RateLimitStack {
  readonly baseUrl: string;
  readonly adminUrl: string;
  readonly limiter: RateLimiter;
  readonly petService: RunningServer;
  readonly internalErrors: unknown[];
  now(): number;
  setNow(ms: number): void;
  /**
   * GET (or `init.method`) a path with the key `keyId`'s secret, or no key when undefined; the
   * response is checked against the OpenAPI document.
   */
  request(path: string, keyId?: string, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

export const secretOf = (keyId: string): string => `secret-${keyId}`;

export async function startRateLimitStack(options: RateLimitStackOptions): Promise<RateLimitStack> {
  const petService = await createPetServer({
    host: '127.0.0.1',
    port: 0,
    repository: new MemoryPetRepository(),
    pageTokenSecret: 'test-secret',
  });
  const petClient = createPetClient({ target: `127.0.0.1:${petService.port}`, timeoutMs: 1000 });
  const apiKeys = ApiKeyStore.fromDocument({
    keys: options.keys.map((key) => ({ id: key.id, sha256: sha256Hex(secretOf(key.id)), plan: key.plan, limits: key.limits })),
  });
  let now = options.startAt ?? Date.UTC(2030, 0, 1, 12, 0, 18);
  const clock = (): number => now;
  const limiter = options.limiter?.(clock) ?? new MemoryRateLimiter({ now: clock });
  const internalErrors: unknown[] = [];
  const onInternalError = (error: unknown): void => {
    internalErrors.push(error);
  };
  const app = createApp({
    petClient,
    apiKeys,
    now: clock,
    limiter,
    rateLimits: options.rateLimits,
    trustProxy: options.trustProxy,
    onInternalError,
    corsOrigins: options.corsOrigins,
  });
  const gateway = await listen(app, '127.0.0.1', 0);
  const admin = await listen(
    createAdminApp({
      limiter,
      usage: {
        keys: () => apiKeys.records.map((record) => record.key),
        ban: (options.rateLimits ?? DEFAULT_RATE_LIMIT_SETTINGS).ban,
        scope: options.usageScope ?? 'replica',
        now: clock,
      },
      adminToken: options.adminToken,
      onInternalError,
      registry: new Registry(),
      readinessChecks: {},
      draining: () => false,
      logger: pino({ level: 'silent' }),
    }),
    '127.0.0.1',
    0,
  );
  const baseUrl = `http://127.0.0.1:${gateway.port}`;
  return {
    baseUrl,
    adminUrl: `http://127.0.0.1:${admin.port}`,
    limiter,
    petService,
    internalErrors,
    now: clock,
    setNow: (ms) => {
      now = ms;
    },
    request(path, keyId, init = {}) {
      const headers = new Headers(init.headers);
      if (keyId !== undefined) headers.set('Authorization', `Bearer ${secretOf(keyId)}`);
      return fetchWithinContract(`${baseUrl}${path}`, { ...init, headers });
    },
    async close() {
      await Promise.all([closeServer(gateway.server), closeServer(admin.server)]);
      petClient.close();
      await limiter.close();
      await petService.shutdown();
    },
  };
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}
