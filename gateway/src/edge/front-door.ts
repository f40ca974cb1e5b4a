import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import type { Tracer } from '@opentelemetry/api';
import type { Express } from 'express';
import parseUrl from 'parseurl';
import type { Logger } from 'pino';
import proxyAddr from 'proxy-addr';
import { ApiError } from '../http/api-error';
import { sendApiError } from '../http/error-handler';
import type { ApiKey, ApiKeyDirectory } from '../keys/api-keys';
import { AMBIGUOUS_CREDENTIALS, authenticate } from './authenticate';
import type { CorsPolicy } from './cors-policy';
import { attachContext, type RequestContext } from './request-context';
import type { GatewayMetrics } from '../observability/metrics';
import { createDecisionCounter } from '../observability/http-metrics';
import { rateLimitHeaders } from '../rate-limit/rate-limit-headers';
import { ipSubject, keyPolicy, keySubject, type RateLimitSettings, unauthenticatedPolicy } from '../rate-limit/rate-limit-policy';
import type { RateLimitDecision, RateLimiter, RateLimitPolicy } from '../rate-limit/rate-limiter';
import { assignRequestId, createRequestObserver } from './request-log';
import { ATTR_RATE_LIMIT_DECISION, ATTR_REFUSAL, startRequestSpan } from '../observability/request-tracing';

/**
 * Routes the front door serves itself, without express: the pets routes (`gateway/src/pets/`).
 * The request has a valid API key; the front door refuses the others.
 */
export interface ServedRoutes {
  /** Serves `request` if `path` (as parseurl reads it) is one of these routes, and says whether it was. */
  serve(request: IncomingMessage, response: ServerResponse, context: RequestContext, path: string): boolean;
  /** The route label of a path these routes serve, else undefined: refusals are reported under it. */
  routeOf(path: string): string | undefined;
}

export interface FrontDoorOptions {
  /** Serves what the front door does not: the docs, the OpenAPI document, proxied routes, 404s. */
  readonly app: Express;
  /** The hot path, served here without express. */
  readonly routes: ServedRoutes;
  readonly apiKeys: ApiKeyDirectory;
  /** Milliseconds since the epoch: keys, and rotated-out secrets, expire on this clock. */
  readonly now: () => number;
  readonly limiter: RateLimiter;
  readonly settings: RateLimitSettings;
  readonly logger: Logger;
  readonly metrics?: GatewayMetrics;
  /** Starts every request's server span (recorded or not; see `observability/request-tracing.ts`). */
  readonly tracer: Tracer;
  /** CORS_ORIGINS' policy; undefined: no CORS headers, and an OPTIONS is an ordinary request. */
  readonly cors?: CorsPolicy;
}

// Express matches paths case-insensitively and ignores a trailing slash, so the front door does too.
const CHARGED = /^\/(?:v1|docs)(?:\/|$)/i;
const KEYED = /^\/v1(?:\/|$)/i;
const OPENAPI_DOCUMENT = /^\/v1\/openapi\.json\/?$/i;

/**
 * The gateway's front door, ahead of express: every request gets its context (request id, log
 * line, metrics), and then
 * - every /v1 and /docs request but a GET or HEAD of the OpenAPI document is charged to the rate
 *   limiter: to its API key when it has a valid one, otherwise to the client IP (`trust proxy`
 *   decides whether X-Forwarded-For counts, as for `request.ip`, but only an IP address is taken
 *   from it; see {@link ipSubject} for IPv6). The API reference at /docs is charged like the API,
 *   so it cannot be fetched free;
 * - refusals are answered here and never reach a route or the pet service: 429 over the limit,
 *   400 for two Authorization fields, and 401 for a /v1 request without a valid key (the OpenAPI
 *   document needs none), so a flood costs little more than a bare HTTP server's reply;
 * - admitted requests carry the rate-limit headers, whatever status follows, and go to the pets
 *   routes, or to express for everything else.
 *
 * With a CORS policy, every response gets its CORS headers first, whoever answers it. A preflight
 * from an allowed origin needs no key (browsers send none): it is charged to the client IP like any
 * request without a valid key, so preflights cannot flood, and answered here with 204.
 */
export function createFrontDoor(options: FrontDoorOptions): RequestListener {
  const { app, routes, apiKeys, now, limiter, settings, logger, metrics, tracer, cors } = options;
  const observe = createRequestObserver(logger, metrics);
  const countDecision = metrics === undefined ? undefined : createDecisionCounter(metrics);
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
  // text that is no IP address would get a bucket of its own per value, of any length.
  const clientSubject = (request: IncomingMessage): string => {
    const derived = proxyAddr(request, app.get('trust proxy fn') as (address: string, hop: number) => boolean);
    return ipSubject(isIP(derived) !== 0 ? derived : (request.socket.remoteAddress ?? ''));
  };
  const preflightHeaders = cors?.preflightHeaders ?? {};

  /**
   * Where an admitted request goes: a preflight's answer (`identity` undefined: a preflight's
   * credentials are not read), a refusal of its credentials, the pets routes, or express.
   */
  const dispatch = (
    request: IncomingMessage,
    response: ServerResponse,
    context: RequestContext,
    path: string,
    identity: ApiKey | ApiError | undefined,
  ): void => {
    if (identity === undefined) {
      context.route = 'preflight';
      if (!request.complete) response.setHeader('Connection', 'close');
      response.writeHead(204, preflightHeaders);
      response.end();
      return;
    }
    if (identity instanceof ApiError && (identity === AMBIGUOUS_CREDENTIALS || (KEYED.test(path) && !OPENAPI_DOCUMENT.test(path)))) {
      refuse(request, response, context, path, identity);
      return;
    }
    if (!routes.serve(request, response, context, path)) app(request, response);
  };

  const refuse = (request: IncomingMessage, response: ServerResponse, context: RequestContext, path: string, apiError: ApiError): void => {
    context.route = routes.routeOf(path);
    if (context.span.isRecording()) context.span.setAttribute(ATTR_REFUSAL, apiError.code);
    sendApiError(request, response, apiError);
  };

  return (request, response) => {
    const context: RequestContext = {
      requestId: assignRequestId(request, response),
      startedAt: process.hrtime.bigint(),
      span: startRequestSpan(tracer, request),
      key: undefined,
      route: undefined,
      cancel: undefined,
    };
    attachContext(request, context);
    observe(response);
    const preflight = cors?.apply(request, response) === true;
    // The path exactly as express's router will route it (parseurl caches it for the router): an
    // absolute-form target (`GET http://host/v1/pets`) or a fragment must not slip past the charge.
    // `listen` (http/http-server.ts) has answered targets without a path already.
    const path = parseUrl(request)!.pathname!;
    if (!CHARGED.test(path) || (OPENAPI_DOCUMENT.test(path) && (request.method === 'GET' || request.method === 'HEAD'))) {
      app(request, response);
      return;
    }
    // A preflight carries no credentials at all: any it has are ignored.
    const identity = preflight ? undefined : authenticate(request, apiKeys, now());
    const key = identity instanceof ApiError ? undefined : identity;
    context.key = key;
    const decision = key === undefined ? limiter.consume(clientSubject(request), ipPolicy) : limiter.consume(keySubject(key.id), policyOf(key));
    decision.then(
      (result) => {
        countDecision?.(key?.plan ?? 'anonymous', result.outcome);
        if (context.span.isRecording()) context.span.setAttribute(ATTR_RATE_LIMIT_DECISION, result.outcome);
        const headers = rateLimitHeaders(result);
        for (const name in headers) response.setHeader(name, headers[name]!);
        if (result.outcome !== 'allowed') {
          // Refused before its body was read: the connection closes once the answer is written,
          // so a client cannot keep trickling a body nobody reads.
          refuse(request, response, context, path, refusal(result, key === undefined));
          return;
        }
        dispatch(request, response, context, path, identity);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'rate limiter failed');
        sendApiError(request, response, new ApiError(500, 'internal', 'internal error'));
      },
    );
  };
}

function refusal(decision: RateLimitDecision, unauthenticated: boolean): ApiError {
  if (decision.outcome === 'banned') {
    return new ApiError(429, 'api_key_banned', 'API key temporarily banned for repeated requests while rate limited');
  }
  const { limit, seconds } = decision.blocking!.window;
  const per = seconds === 60 ? 'minute' : seconds === 86_400 ? 'day' : `${seconds} s`;
  const message = unauthenticated
    ? `too many requests without a valid API key from this address: ${limit} per ${per}`
    : `rate limit exceeded: ${limit} requests per ${per}`;
  return new ApiError(429, 'rate_limited', message);
}
