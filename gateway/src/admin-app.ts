import express, { type Express } from 'express';
import type { Registry } from 'prom-client';
import type { ReadinessCheck } from './readiness';

export interface AdminAppOptions {
  readonly registry: Registry;
  /** Named dependency checks; all must pass for readiness. */
  readonly readinessChecks: Readonly<Record<string, ReadinessCheck>>;
  /** True once shutdown has begun: readiness fails first, so traffic drains before the port closes. */
  readonly draining: () => boolean;
}

/**
 * The admin listener, on its own port and never exposed publicly: `GET /metrics`,
 * `GET /healthz` (liveness: the process answers) and `GET /readyz` (readiness: dependencies
 * answer). No auth, and no rate-limit accounting.
 */
export function createAdminApp(options: AdminAppOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  app.get('/metrics', async (_request, response) => {
    response.type(options.registry.contentType).send(await options.registry.metrics());
  });
  app.get('/healthz', (_request, response) => {
    response.json({ status: 'ok' });
  });
  app.get('/readyz', async (_request, response) => {
    if (options.draining()) {
      response.status(503).json({ status: 'draining' });
      return;
    }
    const results = await Promise.all(
      Object.entries(options.readinessChecks).map(async ([name, check]) => {
        try {
          await check();
          return [name, 'ok'] as const;
        } catch (error) {
          return [name, (error as Error).message] as const;
        }
      }),
    );
    const ready = results.every(([, result]) => result === 'ok');
    response.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not_ready', checks: Object.fromEntries(results) });
  });
  return app;
}
