import express, { type Express } from 'express';
import { stringify } from 'lossless-json';
import type { ApiKeyStore } from './api-keys';
import { createAuthenticate } from './authenticate';
import { createErrorHandler, type InternalErrorListener, notFound } from './error-handler';
import { openApiDocument } from './openapi';
import type { PetClient } from './pet-client';
import { createPetsRouter } from './pets-router';

/** Everything the HTTP app depends on; `main.ts` builds these from the validated config. */
export interface AppOptions {
  readonly petClient: PetClient;
  readonly apiKeys: ApiKeyStore;
  /** Milliseconds since the epoch. */
  readonly now?: () => number;
  readonly onInternalError?: InternalErrorListener;
}

const OPENAPI_JSON = stringify(openApiDocument)!;

/** Builds the public HTTP app. It does not listen; callers do (tests on port 0). */
export function createApp(options: AppOptions): Express {
  const now = options.now ?? Date.now;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');

  app.get('/v1/openapi.json', (_request, response) => {
    response.type('application/json').send(OPENAPI_JSON);
  });
  app.use('/v1', createAuthenticate(options.apiKeys), createPetsRouter({ petClient: options.petClient, now }));
  app.use(notFound);
  app.use(createErrorHandler(options.onInternalError ?? ((error) => console.error(error))));
  return app;
}
