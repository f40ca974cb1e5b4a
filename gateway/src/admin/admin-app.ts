import { createHash, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import express, { type Express, type RequestHandler } from 'express';
import ipaddr from 'ipaddr.js';
import type { Logger } from 'pino';
import { ApiError } from '../http/api-error';
import { createErrorHandler, type InternalErrorListener, notFound } from '../http/error-handler';
import type { ApiKey } from '../keys/api-keys';
import { readUsageReport } from '../keys/key-usage';
import { keySubject } from '../rate-limit/rate-limit-policy';
import type { BanPolicy, RateLimiter, UsageScope } from '../rate-limit/rate-limiter';
import type { ReadinessCheck } from '../pet-service-client/readiness';

export interface AdminAppOptions {
  /** What /metrics serves: this process's registry, or the workers' summed by the cluster primary. */
  readonly registry: { readonly contentType: string; metrics(): Promise<string> };
  /** Named dependency checks; all must pass for readiness. */
  readonly readinessChecks: Readonly<Record<string, ReadinessCheck>>;
  /**
   * Checks shown in the /readyz body that do not decide readiness: Redis, whose outage the
   * limiter absorbs by counting in memory. Failing readiness on it would take every replica out
   * of service at once, turning a Redis outage into a full one.
   */
  readonly reportedChecks?: Readonly<Record<string, ReadinessCheck>>;
  /** True once shutdown has begun: readiness fails first, so traffic drains before the port closes. */
  readonly draining: () => boolean;
  readonly limiter: RateLimiter;
  /** What `GET /admin/usage` reports; without it, those routes are not served. */
  readonly usage?: AdminUsageOptions;
  /**
   * Required as `Authorization: Bearer <token>` by every `/admin/…` route: those that change state,
   * and those that tell about keys (their bans, their usage). Without one, those routes answer
   * loopback clients only (`kubectl port-forward`, a sidecar).
   */
  readonly adminToken?: string;
  readonly logger: Logger;
  /** Told of every error that became a 500; default: logged at error level. */
  readonly onInternalError?: InternalErrorListener;
}

/** The keys and settings `GET /admin/usage` reads the limiter with. */
export interface AdminUsageOptions {
  /** The keys in force now (the keys file as last loaded), in file order. */
  readonly keys: () => readonly ApiKey[];
  readonly ban: BanPolicy;
  /** `shared` when the limiter counts in Redis, `replica` when in this process only. */
  readonly scope: UsageScope;
  /** Milliseconds since the epoch. */
  readonly now: () => number;
}

/**
 * The operators' app, on its own listener (ADMIN_PORT) and never exposed with the public API:
 * `GET /metrics`, `GET /healthz` (liveness: the process answers), `GET /readyz` (readiness: its
 * dependencies answer), and `DELETE /admin/bans/:keyId` to lift a ban (204, or 404 when none was
 * in force; with the in-memory store this is the only way to reach a replica's bans), and
 * `GET /admin/usage` and `/admin/usage/:keyId`, what keys have used of their plan, read from this
 * gateway's limiter without spending anything (`scope: replica` when those are this process's
 * counts only, see {@link AdminUsageOptions}). Probes and
 * metrics are open, for kubelet and Prometheus; `/admin/…` is guarded (see
 * {@link AdminAppOptions.adminToken}), since lifting a ban, or learning whether a key is banned, is
 * nobody else's business. No rate-limit accounting.
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
    const [decisive, reported] = await Promise.all([run(options.readinessChecks), run(options.reportedChecks ?? {})]);
    const ready = decisive.every(([, result]) => result === 'ok');
    response
      .status(ready ? 200 : 503)
      .json({ status: ready ? 'ready' : 'not_ready', checks: Object.fromEntries([...decisive, ...reported]) });
  });
  app.use('/admin', guardAdmin(options.adminToken));
  app.delete('/admin/bans/:keyId', async (request, response) => {
    const keyId = String(request.params.keyId);
    let lifted: boolean;
    try {
      lifted = await options.limiter.unban(keySubject(keyId));
    } catch {
      throw new ApiError(503, 'service_unavailable', 'the shared rate-limit store is unreachable; retry');
    }
    if (!lifted) throw new ApiError(404, 'not_found', `no ban in force for key ${keyId}`);
    options.logger.info({ keyId }, 'ban lifted');
    response.status(204).end();
  });
  const usage = options.usage;
  if (usage !== undefined) {
    const report = (keys: readonly ApiKey[]) =>
      readUsageReport({ limiter: options.limiter, keys, ban: usage.ban, scope: usage.scope, now: usage.now });
    app.get('/admin/usage', async (_request, response) => {
      response.json(await report(usage.keys()));
    });
    app.get('/admin/usage/:keyId', async (request, response) => {
      const keyId = String(request.params.keyId);
      const key = usage.keys().find((known) => known.id === keyId);
      if (key === undefined) throw new ApiError(404, 'not_found', `no key ${keyId} in the keys file`);
      const { scope, at, keys } = await report([key]);
      response.json({ scope, at, ...keys[0] });
    });
  }
  app.use(notFound);
  app.use(createErrorHandler(options.onInternalError ?? ((error) => options.logger.error({ err: error }, 'internal error'))));
  return app;
}

function run(checks: Readonly<Record<string, ReadinessCheck>>): Promise<Array<readonly [string, string]>> {
  return Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      try {
        await check();
        return [name, 'ok'] as const;
      } catch (error) {
        return [name, (error as Error).message] as const;
      }
    }),
  );
}

const ADMIN_CHALLENGE = 'Bearer realm="petstore-admin"';

/** The admin routes' guard: the token, compared in constant time, or else a loopback peer. */
function guardAdmin(token: string | undefined): RequestHandler {
  if (token === undefined) {
    return (request, _response, next) => {
      next(isLoopback(request.socket.remoteAddress) ? undefined : new ApiError(403, 'forbidden', 'admin routes answer loopback clients only unless ADMIN_TOKEN is set'));
    };
  }
  // Digests of equal length, so the comparison takes the same time whatever was sent.
  const expected = createHash('sha256').update(token).digest();
  return (request, _response, next) => {
    const sent = /^bearer +(\S+) *$/i.exec(request.headers.authorization ?? '')?.[1] ?? '';
    const ok = timingSafeEqual(createHash('sha256').update(sent).digest(), expected);
    next(ok ? undefined : new ApiError(401, 'unauthorized', 'admin token required', { 'WWW-Authenticate': ADMIN_CHALLENGE }));
  };
}

/** Whether a peer address is a loopback one (IPv4 127/8, IPv6 ::1, or 127/8 mapped into IPv6). */
export function isLoopback(address: string | undefined): boolean {
  return address !== undefined && isIP(address) !== 0 && ipaddr.process(address).range() === 'loopback';
}
