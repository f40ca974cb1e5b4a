import type { RequestListener } from 'node:http';
import express from 'express';
import { stringify } from 'lossless-json';
import pino, { type Logger } from 'pino';
import type { ApiKeyDirectory } from './edge/api-keys';
import { requireApiKey } from './edge/authenticate';
import { type CorsOrigins, createCorsPolicy } from './edge/cors-policy';
import { createErrorHandler, type InternalErrorListener, notFound } from './http/error-handler';
import { MemoryRateLimiter } from './rate-limit/memory-rate-limiter';
import type { GatewayMetrics } from './observability/metrics';
import { openApiDocumentFor } from './http/openapi';
import type { PetClient } from './pet-service-client/pet-client';
import { createPetsRouter, methodNotAllowed } from './http/pets-router';
import { createRateLimitEdge } from './edge/front-door';
import { DEFAULT_RATE_LIMIT_SETTINGS, type RateLimitSettings } from './rate-limit/rate-limit-policy';
import type { RateLimiter } from './rate-limit/rate-limiter';
import { createRequestLogging } from './observability/request-logging';
import { createProxyRoutes } from './upstream/proxy-route';
import type { ProxyRoute } from './upstream/routes-file';

/** Express's `trust proxy` setting: whether, or from which hops, X-Forwarded-For is believed. */
export type TrustProxy = boolean | number | readonly string[];

/** Everything the HTTP app depends on; `main.ts` builds these from the validated config. */
export interface AppOptions {
  readonly petClient: PetClient;
  /** The keys file's keys; `main.ts` gives a holder that follows the file as it changes. */
  readonly apiKeys: ApiKeyDirectory;
  /** Milliseconds since the epoch. */
  readonly now?: () => number;
  readonly logger?: Logger;
  /** Told of every error that became a 500; default: logged at error level. */
  readonly onInternalError?: InternalErrorListener;
  readonly metrics?: GatewayMetrics;
  /** True once shutdown has begun: responses then ask clients to reconnect elsewhere. */
  readonly draining?: () => boolean;
  /** Default: in-memory counters on {@link AppOptions.now}. */
  readonly limiter?: RateLimiter;
  readonly rateLimits?: RateLimitSettings;
  /** Default false: the client IP is the socket's peer. */
  readonly trustProxy?: TrustProxy;
  /** Prefixes proxied to HTTP upstreams (ROUTES_FILE); default none. */
  readonly routes?: readonly ProxyRoute[];
  /** Browser origins allowed to call the API (CORS_ORIGINS); default none: no CORS headers. */
  readonly corsOrigins?: CorsOrigins;
  /**
   * For benchmarks only (`bench/feature-gateway.ts`), never set by `main.ts`: features turned off
   * to measure what each costs per request. `limiter`: requests are identified but not charged and
   * carry no rate-limit headers; `validation`: the pets routes skip their JSON schemas.
   */
  readonly benchWithout?: { readonly limiter?: boolean; readonly validation?: boolean };
}

/**
 * Builds the public HTTP handler: the rate-limit edge in front of the express app. It does not
 * listen; callers do (tests on port 0).
 */
export function createApp(options: AppOptions): RequestListener {
  const now = options.now ?? Date.now;
  const logger = options.logger ?? pino({ level: 'silent' });
  const draining = options.draining ?? (() => false);
  const { metrics } = options;
  const routes = options.routes ?? [];
  const openApiJson = stringify(openApiDocumentFor(routes))!;
  // A preflight allows every method the gateway serves on some path: the pets API's and the routes'.
  const cors = createCorsPolicy(options.corsOrigins ?? [], [...new Set(['GET', 'HEAD', 'POST', ...routes.flatMap((route) => route.methods)])]);
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.set('trust proxy', options.trustProxy ?? false);

  // One middleware for the log line, the metrics and draining: each layer of express's router
  // costs a path match on every request.
  const observe = createRequestLogging(logger, metrics);
  app.use((request, response, next) => {
    if (draining()) response.set('Connection', 'close');
    observe(request, response, next);
  });

  app.get('/v1/openapi.json', (_request, response) => {
    response.type('application/json').send(openApiJson);
  });
  app.all('/v1/openapi.json', methodNotAllowed('GET, HEAD'));
  app.use('/v1', requireApiKey);
  for (const { prefix, handlers } of createProxyRoutes({ routes, logger, cors: cors !== undefined })) app.use(prefix, ...handlers);
  app.use(createPetsRouter({ petClient: options.petClient, now, validate: options.benchWithout?.validation !== true }));
  app.use(notFound);
  app.use(createErrorHandler(options.onInternalError ?? ((error) => logger.error({ err: error }, 'internal error'))));
  return createRateLimitEdge({
    app,
    apiKeys: options.apiKeys,
    now,
    limiter: options.limiter ?? new MemoryRateLimiter({ now }),
    settings: options.rateLimits ?? DEFAULT_RATE_LIMIT_SETTINGS,
    logger,
    metrics,
    draining,
    charge: options.benchWithout?.limiter !== true,
    cors,
  });
}
