import express, { type Express } from 'express';
import { stringify } from 'lossless-json';
import pino, { type Logger } from 'pino';
import type { ApiKeyStore } from './api-keys';
import { createAuthenticate } from './authenticate';
import { createErrorHandler, notFound } from './error-handler';
import { createHttpMetrics } from './http-metrics';
import type { GatewayMetrics } from './metrics';
import { openApiDocument } from './openapi';
import type { PetClient } from './pet-client';
import { createPetsRouter } from './pets-router';
import { createRequestLogging } from './request-logging';

/** Everything the HTTP app depends on; `main.ts` builds these from the validated config. */
export interface AppOptions {
  readonly petClient: PetClient;
  readonly apiKeys: ApiKeyStore;
  /** Milliseconds since the epoch. */
  readonly now?: () => number;
  readonly logger?: Logger;
  readonly metrics?: GatewayMetrics;
  /** True once shutdown has begun: responses then ask clients to reconnect elsewhere. */
  readonly draining?: () => boolean;
}

const OPENAPI_JSON = stringify(openApiDocument)!;

/** Builds the public HTTP app. It does not listen; callers do (tests on port 0). */
export function createApp(options: AppOptions): Express {
  const now = options.now ?? Date.now;
  const logger = options.logger ?? pino({ level: 'silent' });
  const draining = options.draining ?? (() => false);
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');

  app.use(createRequestLogging(logger));
  if (options.metrics !== undefined) app.use(createHttpMetrics(options.metrics));
  app.use((_request, response, next) => {
    if (draining()) response.set('Connection', 'close');
    next();
  });

  app.get('/v1/openapi.json', (_request, response) => {
    response.type('application/json').send(OPENAPI_JSON);
  });
  app.use('/v1', createAuthenticate(options.apiKeys));
  app.use(createPetsRouter({ petClient: options.petClient, now }));
  app.use(notFound);
  app.use(createErrorHandler((error) => logger.error({ err: error }, 'internal error')));
  return app;
}
