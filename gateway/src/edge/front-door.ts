import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import type { Express } from 'express';
import parseUrl from 'parseurl';
import type { Logger } from 'pino';
import proxyAddr from 'proxy-addr';
import { ApiError } from '../http/api-error';
import { fieldCount } from '../http/raw-headers';
import type { ApiKey, ApiKeyDirectory } from './api-keys';
import { bearerToken } from './authenticate';
import type { CorsPolicy } from './cors-policy';
import { recordRequest } from '../observability/http-metrics';
import type { GatewayMetrics } from '../observability/metrics';
import { rateLimitHeaders } from '../rate-limit/rate-limit-headers';
import { ipSubject, keyPolicy, keySubject, type RateLimitSettings, unauthenticatedPolicy } from '../rate-limit/rate-limit-policy';
import type { RateLimitDecision, RateLimiter, RateLimitPolicy } from '../rate-limit/rate-limiter';
import { assignRequestId, logRequest } from '../observability/request-logging';

export interface RateLimitEdgeOptions {
  /**
   * Where admitted requests go, with `response.locals.apiKey` set when the key is valid, and
   * `response.locals.keyRefusal` saying why not when a bearer secret was sent but refused.
   */
  readonly app: Express;
  readonly apiKeys: ApiKeyDirectory;
  /** Milliseconds since the epoch: keys, and rotated-out secrets, expire on this clock. */
  readonly now: () => number;
  readonly limiter: RateLimiter;
  readonly settings: RateLimitSettings;
  readonly logger: Logger;
  readonly metrics?: GatewayMetrics;
  /** True once shutdown has begun: refusals, like every response, then close their connection. */
  readonly draining: () => boolean;
  /** False only in benchmarks that measure the limiter's cost: requests are identified, never charged. */
  readonly charge?: boolean;
  /** CORS_ORIGINS' policy; undefined: no CORS headers, and an OPTIONS is an ordinary request. */
  readonly cors?: CorsPolicy;
}

// Express matches paths case-insensitively and ignores a trailing slash, so the edge does too.
const CHARGED = /^\/(?:v1|docs)(?:\/|$)/i;
const FREE = /^\/v1\/openapi\.json\/?$/i;

/**
 * Charges every /v1 and /docs request but a GET or HEAD of the OpenAPI document before express
 * sees it (the API reference at /docs is charged like the API, so it cannot be fetched free): to
 * its API key when it has a valid one, otherwise to the client IP (`trust proxy` decides whether
 * X-Forwarded-For counts, as for `request.ip`, but only an IP address is taken from it; see
 * {@link ipSubject} for IPv6). Admitted requests go on to `app` with the
 * rate-limit headers already set, so every status that follows (401, 4xx, 5xx) carries them.
 *
 * Refusals are answered here, with their log line and metrics, and never enter express or reach
 * the pet service: a flood of 429s then costs little more than a bare HTTP server's reply.
 *
 * With a CORS policy, every response gets its CORS headers first, whoever answers it. A preflight
 * from an allowed origin needs no key (browsers send none): it is charged to the client IP like any
 * request without a valid key, so preflights cannot flood, and answered here with 204.
 */
export function createRateLimitEdge(options: RateLimitEdgeOptions): RequestListener {
  const { app, apiKeys, now, limiter, settings, logger, metrics, draining, cors } = options;
  const keyPolicies = new WeakMap<ApiKey, RateLimitPolicy>();
  const ipPolicy = unauthenticatedPolicy(settings.unauthenticatedPerMinute);
  const policyOf = (key: ApiKey): RateLimitPolicy => {
    let policy = keyPolicies.get(key);
    if (policy === undefined) {
      policy = keyPolicy(key.limits, settings.ban);
      keyPolicies.set(key, policy);
    }
    return policy;
  };
  // With `trust proxy` true or a hop count, proxy-addr returns whatever X-Forwarded-For holds:
  // text that is no IP address would get a bucket of its own per value, of any length (issue 13).
  const clientSubject = (request: IncomingMessage): string => {
    const derived = proxyAddr(request, app.get('trust proxy fn') as (address: string, hop: number) => boolean);
    return ipSubject(isIP(derived) !== 0 ? derived : (request.socket.remoteAddress ?? ''));
  };

  /** Answers without express: a refusal (route label `unmatched`), or a preflight (`preflight`). */
  const answer = (
    request: IncomingMessage,
    response: ServerResponse,
    route: 'unmatched' | 'preflight',
    status: number,
    headers: Readonly<Record<string, string | number>>,
    body: string,
    start: bigint,
    key?: ApiKey,
  ): void => {
    const requestId = assignRequestId(request, response);
    response.writeHead(status, {
      ...headers,
      // Refused before its body was read, or while draining: Node closes the connection once
      // the answer is written, so a client cannot keep trickling a body nobody reads.
      ...(draining() || !request.complete ? { Connection: 'close' } : {}),
    });
    response.end(body);
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    logRequest(logger, { requestId, method: request.method, route, status, duration: seconds * 1000, keyId: key?.id });
    if (metrics !== undefined) recordRequest(metrics, route, request.method ?? '', status, seconds);
  };
  const refuse = (request: IncomingMessage, response: ServerResponse, error: ApiError, start: bigint, key?: ApiKey): void => {
    const body = error.toJson();
    const headers = { ...error.headers, 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) };
    answer(request, response, 'unmatched', error.status, headers, body, start, key);
  };
  const preflightHeaders = cors?.preflightHeaders ?? {};
  /**
   * What follows the charge, or its absence (`charge: false`): refuse ambiguous credentials, answer
   * a preflight, or hand the request to express with what the edge learnt of its key. `headers` are
   * the charge's rate-limit headers. Made once, not per request: it sits on every request's path.
   */
  const admit = (
    request: IncomingMessage,
    response: ServerResponse,
    start: bigint,
    identified: ReturnType<ApiKeyDirectory['identify']> | undefined,
    preflight: boolean,
    ambiguous: boolean,
    headers: Record<string, string> = {},
  ): void => {
    if (ambiguous) {
      refuse(request, response, new ApiError(400, 'invalid_request', AMBIGUOUS_CREDENTIALS, headers), start);
      return;
    }
    for (const name in headers) response.setHeader(name, headers[name]!);
    if (preflight) {
      answer(request, response, 'preflight', 204, preflightHeaders, '', start);
      return;
    }
    (response as ServerResponse & { locals?: object }).locals =
      typeof identified === 'object' ? { apiKey: identified } : identified !== undefined ? { keyRefusal: identified } : {};
    app(request, response);
  };

  return (request, response) => {
    const preflight = cors?.apply(request, response) === true;
    // The path exactly as express's router will route it (parseurl caches it for the router): an
    // absolute-form target (`GET http://host/v1/pets`) or a fragment must not slip past the charge.
    // `listen` (http/http-server.ts) has answered targets without a path already.
    const path = parseUrl(request)!.pathname!;
    if (!CHARGED.test(path) || (FREE.test(path) && (request.method === 'GET' || request.method === 'HEAD'))) {
      app(request, response);
      return;
    }
    const start = process.hrtime.bigint();
    const authorization = request.headers.authorization;
    // Node keeps the first of two Authorization fields: which credential the client meant is
    // anyone's guess, so neither is used, and the request is charged to its address (issue 17).
    // A preflight carries no credentials at all: any it has are ignored.
    const ambiguous = !preflight && authorization !== undefined && fieldCount(request.rawHeaders, 'authorization') > 1;
    const token = preflight || ambiguous ? undefined : bearerToken(authorization);
    const identified = token === undefined ? undefined : apiKeys.identify(token, now());
    const key = typeof identified === 'object' ? identified : undefined;
    if (options.charge === false) {
      admit(request, response, start, identified, preflight, ambiguous);
      return;
    }
    const decision = key === undefined ? limiter.consume(clientSubject(request), ipPolicy) : limiter.consume(keySubject(key.id), policyOf(key));
    decision.then(
      (result) => {
        metrics?.rateLimitDecisions.inc({ plan: key?.plan ?? 'anonymous', outcome: result.outcome });
        const headers = rateLimitHeaders(result);
        if (result.outcome !== 'allowed') {
          refuse(request, response, refusal(result, key === undefined, headers), start, key);
          return;
        }
        admit(request, response, start, identified, preflight, ambiguous, headers);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'rate limiter failed');
        refuse(request, response, new ApiError(500, 'internal', 'internal error'), start, key);
      },
    );
  };
}

const AMBIGUOUS_CREDENTIALS = 'Authorization: must be given once';

function refusal(decision: RateLimitDecision, unauthenticated: boolean, headers: Record<string, string>): ApiError {
  if (decision.outcome === 'banned') {
    return new ApiError(429, 'api_key_banned', 'API key temporarily banned for repeated requests while rate limited', headers);
  }
  const { limit, seconds } = decision.blocking!.window;
  const per = seconds === 60 ? 'minute' : seconds === 86_400 ? 'day' : `${seconds} s`;
  const message = unauthenticated
    ? `too many requests without a valid API key from this address: ${limit} per ${per}`
    : `rate limit exceeded: ${limit} requests per ${per}`;
  return new ApiError(429, 'rate_limited', message, headers);
}
