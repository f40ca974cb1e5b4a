import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, RequestHandler, Response } from 'express';
import { REQUEST_ID_PATTERN } from '@petstore/proto';
import type { Logger } from 'pino';
import { recordRequest } from './http-metrics';
import type { GatewayMetrics } from './metrics';

const ROUTE_LABEL = Symbol('route label');

/**
 * The route template a request matched (`/v1/pets/:petId`), the label {@link labelRoute} gave it,
 * or `unmatched`; bounded for labels.
 */
export function routeOf(request: IncomingMessage): string {
  const { route } = request as Partial<Request>;
  if (route !== undefined) return String(route.path);
  return (request as { [ROUTE_LABEL]?: string })[ROUTE_LABEL] ?? 'unmatched';
}

/** Names the route of a request that no express route matches, such as a proxied prefix. */
export function labelRoute(request: IncomingMessage, label: string): void {
  (request as { [ROUTE_LABEL]?: string })[ROUTE_LABEL] = label;
}

/**
 * An incoming `X-Request-Id` is kept when it is sane (at most 128 safe characters), so one id can
 * follow a call from the edge through both services; anything else is replaced by a new UUID.
 * The id is echoed on the response.
 */
export function assignRequestId(request: IncomingMessage, response: ServerResponse): string {
  const incoming = request.headers['x-request-id'];
  const id = typeof incoming === 'string' && REQUEST_ID_PATTERN.test(incoming) ? incoming : randomUUID();
  response.setHeader('X-Request-Id', id);
  return id;
}

/**
 * The caller of a request the edge authenticated: what it puts in `response.locals.apiKey` (the
 * whole key record; only its public id is read below the edge). Never the secret.
 */
export interface Caller {
  readonly id: string;
}

/** The authenticated caller, or undefined for a request without a valid key. */
export function callerOf(locals: Record<string, unknown>): Caller | undefined {
  return locals.apiKey as Caller | undefined;
}

/** The id {@link createRequestLogging} gave a request. */
export function requestIdOf(response: Response): string {
  return response.locals.requestId as string;
}

/** What the gateway logs of every request, whether express or the rate-limit edge answered it. */
export interface RequestLine {
  readonly requestId: string;
  readonly method: string | undefined;
  readonly route: string;
  readonly status: number;
  /** Milliseconds. */
  readonly duration: number;
  readonly keyId: string | undefined;
}

/** Writes a request's line: `request`, `request failed` (error level) for a 5xx, or `request aborted`. */
export function logRequest(logger: Logger, line: RequestLine, aborted = false): void {
  if (aborted) logger.info({ ...line, aborted: true }, 'request aborted');
  else if (line.status >= 500) logger.error(line, 'request failed');
  else logger.info(line, 'request');
}

const STARTED = Symbol('request start');

type TimedResponse = Response & { [STARTED]: bigint };

/**
 * One log line per request, when its response is finished: method, route, status, duration (ms),
 * key id and request id; never the key or the Authorization header. A 5xx is logged at error level
 * as `request failed`; a response the client abandoned before it was finished, as `request aborted`.
 * With `metrics`, a finished response is also counted and timed by route template, method and
 * status (an abandoned one is not). The id is kept for {@link requestIdOf}: it travels to the pet
 * service as gRPC metadata.
 *
 * Written by hand rather than with pino-http: that builds two child loggers and a serialised
 * request for every request, which was about a tenth of the gateway's CPU per proxied call. The
 * listeners are made once, not per request, and serve both the log line and the metrics.
 */
export function createRequestLogging(logger: Logger, metrics?: GatewayMetrics): RequestHandler {
  function done(this: TimedResponse): void {
    this.removeListener('finish', done);
    this.removeListener('close', done);
    const request = this.req;
    const elapsed = Number(process.hrtime.bigint() - this[STARTED]);
    const finished = this.writableFinished;
    const line: RequestLine = {
      requestId: this.locals.requestId as string,
      method: request.method,
      route: routeOf(request),
      status: this.statusCode,
      duration: elapsed / 1e6,
      keyId: callerOf(this.locals)?.id,
    };
    logRequest(logger, line, !finished);
    if (finished && metrics !== undefined) recordRequest(metrics, line.route, request.method, line.status, elapsed / 1e9);
  }
  return (request, response, next) => {
    (response as TimedResponse)[STARTED] = process.hrtime.bigint();
    response.locals.requestId = assignRequestId(request, response);
    response.on('finish', done);
    response.on('close', done);
    next();
  };
}
