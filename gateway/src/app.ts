import express, { type Express } from 'express';
import { stringify } from 'lossless-json';
import type { ApiKeyStore } from './api-keys';
import { createIdentify, requireApiKey } from './authenticate';
import { createErrorHandler, type InternalErrorListener, notFound } from './error-handler';
import { MemoryRateLimiter } from './memory-rate-limiter';
import { openApiDocument } from './openapi';
import type { PetClient } from './pet-client';
import { createPetsRouter } from './pets-router';
import { createRateLimit } from './rate-limit-middleware';
import { DEFAULT_RATE_LIMIT_SETTINGS, type RateLimitSettings } from './rate-limit-policy';
import type { RateLimiter } from './rate-limiter';

/** Express's `trust proxy` setting: whether, or from which hops, X-Forwarded-For is believed. */
export type TrustProxy = boolean | number | readonly string[];

/** Everything the HTTP app depends on; `main.ts` builds these from the validated config. */
export interface AppOptions {
  readonly petClient: PetClient;
  readonly apiKeys: ApiKeyStore;
  /** Milliseconds since the epoch. */
  readonly now?: () => number;
  readonly onInternalError?: InternalErrorListener;
  /** Default: in-memory counters on {@link AppOptions.now}. */
  readonly limiter?: RateLimiter;
  readonly rateLimits?: RateLimitSettings;
  /** Default false: the client IP is the socket's peer. */
  readonly trustProxy?: TrustProxy;
}

const OPENAPI_JSON = stringify(openApiDocument)!;

/** Builds the public HTTP app. It does not listen; callers do (tests on port 0). */
export function createApp(options: AppOptions): Express {
  const now = options.now ?? Date.now;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.set('trust proxy', options.trustProxy ?? false);

  app.get('/v1/openapi.json', (_request, response) => {
    response.type('application/json').send(OPENAPI_JSON);
  });
  app.use(
    '/v1',
    createIdentify(options.apiKeys),
    createRateLimit({
      limiter: options.limiter ?? new MemoryRateLimiter({ now }),
      settings: options.rateLimits ?? DEFAULT_RATE_LIMIT_SETTINGS,
    }),
    requireApiKey,
    createPetsRouter({ petClient: options.petClient, now }),
  );
  app.use(notFound);
  app.use(createErrorHandler(options.onInternalError ?? ((error) => console.error(error))));
  return app;
}
