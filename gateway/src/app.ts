import type { RequestListener } from 'node:http';
import type { Tracer } from '@opentelemetry/api';
import { NON_RECORDING_TRACER } from '@petstore/runtime';
import express from 'express';
import { stringify } from 'lossless-json';
import pino, { type Logger } from 'pino';
import type { ApiKeyDirectory } from './keys/api-keys';
import type { CorsOrigins, TrustProxy } from './config';
import { createCorsPolicy } from './edge/cors-policy';
import { createErrorHandler, type InternalErrorListener, methodNotAllowed, notFound } from './http/error-handler';
import { MemoryRateLimiter } from './rate-limit/memory-rate-limiter';
import type { GatewayMetrics } from './observability/metrics';
import { countShed } from './observability/http-metrics';
import { openApiDocumentFor } from './http/openapi/proxied-routes';
import { createApiDocsRouter } from './http/api-docs-router';
import type { PetClient } from './pet-service-client/pet-client';
import { createPetsRoutes } from './pets/pets-routes';
import { createFrontDoor } from './edge/front-door';
import { DEFAULT_RATE_LIMIT_SETTINGS, type RateLimitSettings } from './rate-limit/rate-limit-policy';
import type { RateLimiter } from './rate-limit/rate-limiter';
import { createProxyRoutes } from './upstream/proxy-route';
import type { ProxyRoute } from './upstream/routes-file';

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
  /** Default: in-memory counters on {@link AppOptions.now}. */
  readonly limiter?: RateLimiter;
  readonly rateLimits?: RateLimitSettings;
  /** Default false: the client IP is the socket's peer. */
  readonly trustProxy?: TrustProxy;
  /** Prefixes proxied to HTTP upstreams (ROUTES_FILE); default none. */
  readonly routes?: readonly ProxyRoute[];
  /** Browser origins allowed to call the API (CORS_ORIGINS); default none: no CORS headers. */
  readonly corsOrigins?: CorsOrigins;
  /** Starts the spans of requests and of the calls they make; default: none recorded (ids still propagate). */
  readonly tracer?: Tracer;
}

/**
 * Builds the public HTTP handler: the front door, which serves the pets routes itself, in front of
 * the express app for everything else. It does not listen; callers do (tests on port 0).
 */
export function createApp(options: AppOptions): RequestListener {
  const now = options.now ?? Date.now;
  const logger = options.logger ?? pino({ level: 'silent' });
  const onInternalError = options.onInternalError ?? ((error: unknown) => logger.error({ err: error }, 'internal error'));
  const routes = options.routes ?? [];
  const tracer = options.tracer ?? NON_RECORDING_TRACER;
  const openApiJson = stringify(openApiDocumentFor(routes))!;
  // A preflight allows every method the gateway serves on some path: the pets API's and the routes'.
  const cors = createCorsPolicy(options.corsOrigins ?? [], [...new Set(['GET', 'HEAD', 'POST', 'PATCH', 'DELETE', ...routes.flatMap((route) => route.methods)])]);
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.set('trust proxy', options.trustProxy ?? false);
  app.get('/v1/openapi.json', (_request, response) => {
    response.type('application/json').send(openApiJson);
  });
  const openApiMethods = methodNotAllowed('GET, HEAD');
  app.all('/v1/openapi.json', () => {
    throw openApiMethods;
  });
  app.use(createApiDocsRouter());
  for (const { prefix, handlers } of createProxyRoutes({ routes, logger, cors: cors !== undefined, tracer })) app.use(prefix, ...handlers);
  app.use(notFound);
  app.use(createErrorHandler(onInternalError));
  return createFrontDoor({
    app,
    routes: createPetsRoutes({
      petClient: options.petClient,
      now,
      onInternalError,
      tracer,
      ...(options.metrics === undefined ? {} : { onShed: countShed(options.metrics) }),
    }),
    apiKeys: options.apiKeys,
    now,
    limiter: options.limiter ?? new MemoryRateLimiter({ now }),
    settings: options.rateLimits ?? DEFAULT_RATE_LIMIT_SETTINGS,
    logger,
    metrics: options.metrics,
    tracer,
    cors,
  });
}
