import express, { type Express } from 'express';
import { ApiError } from './api-error';
import { createErrorHandler, type InternalErrorListener, notFound } from './error-handler';
import { keySubject } from './rate-limit-policy';
import type { RateLimiter } from './rate-limiter';

export interface AdminAppOptions {
  readonly limiter: RateLimiter;
  readonly onInternalError?: InternalErrorListener;
}

/**
 * The operators' app, served on its own listener (ADMIN_PORT) so it is never exposed with the
 * public API. `DELETE /admin/bans/:keyId` lifts a ban: 204, or 404 when none was in force. With
 * the in-memory store this is the only way to reach a replica's bans.
 */
export function createAdminApp(options: AdminAppOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  app.delete('/admin/bans/:keyId', async (request, response) => {
    const keyId = String(request.params.keyId);
    let lifted: boolean;
    try {
      lifted = await options.limiter.unban(keySubject(keyId));
    } catch {
      throw new ApiError(503, 'service_unavailable', 'the shared rate-limit store is unreachable; retry');
    }
    if (!lifted) throw new ApiError(404, 'not_found', `no ban in force for key ${keyId}`);
    response.status(204).end();
  });
  app.use(notFound);
  app.use(createErrorHandler(options.onInternalError ?? ((error) => console.error(error))));
  return app;
}
