import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request } from 'express';
import { REQUEST_ID_PATTERN } from '@petstore/proto';
import type { Logger } from 'pino';
import { contextOf, type RequestContext } from './request-context';
import { createRequestRecorder } from '../observability/http-metrics';
import type { GatewayMetrics } from '../observability/metrics';
import { endRequestSpan } from '../observability/request-tracing';

/**
 * The route a request is reported under: the template or label its context names, else the
 * template of the express route it matched, else `unmatched`; bounded for labels.
 */
function routeOf(request: IncomingMessage, context: RequestContext): string {
  if (context.route !== undefined) return context.route;
  const { route } = request as Partial<Request>;
  return route === undefined ? 'unmatched' : String(route.path);
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

/** What the gateway logs of every request, whether express or the rate-limit edge answered it. */
export interface RequestLine {
  readonly requestId: string;
  readonly method: string | undefined;
  readonly route: string;
  readonly status: number;
  /** Milliseconds. */
  readonly duration: number;
  readonly keyId: string | undefined;
  /** The request's trace, and its server span in it (W3C hex ids), so a line leads to its trace. */
  readonly traceId: string;
  readonly spanId: string;
}

/** Writes a request's line: `request`, `request failed` (error level) for a 5xx, or `request aborted`. */
export function logRequest(logger: Logger, line: RequestLine, aborted = false): void {
  if (aborted) logger.info({ ...line, aborted: true }, 'request aborted');
  else if (line.status >= 500) logger.error(line, 'request failed');
  else logger.info(line, 'request');
}

/**
 * One log line per request, when its response is finished: method, route, status, duration (ms),
 * key id, request id, trace id and span id; never the key or the Authorization header. A 5xx is logged at error level
 * as `request failed`; a response the client abandoned before it was finished, as `request aborted`,
 * and the call made for it is cancelled (its context's `cancel`): nobody is waiting for its answer.
 * With `metrics`, a finished response is also counted and timed by route, method and status (an
 * abandoned one is not). The request's server span ends with it.
 *
 * Written by hand rather than with pino-http, which builds two child loggers and a serialised
 * request for every request. The one listener is made once, not per request: a response emits
 * `close` after `finish`, or alone when the connection went first.
 */
export function createRequestObserver(logger: Logger, metrics?: GatewayMetrics): (response: ServerResponse) => void {
  const recordRequest = metrics === undefined ? undefined : createRequestRecorder(metrics);
  function done(this: ServerResponse): void {
    const request = this.req;
    const context = contextOf(request);
    const elapsed = Number(process.hrtime.bigint() - context.startedAt);
    const finished = this.writableFinished;
    if (!finished) context.cancel?.abort();
    const { traceId, spanId } = context.span.spanContext();
    const line: RequestLine = {
      requestId: context.requestId,
      method: request.method,
      route: routeOf(request, context),
      status: this.statusCode,
      duration: elapsed / 1e6,
      keyId: context.key?.id,
      traceId,
      spanId,
    };
    logRequest(logger, line, !finished);
    if (context.span.isRecording()) endRequestSpan(context.span, request, { ...line, plan: context.key?.plan, aborted: !finished });
    if (finished && recordRequest !== undefined) recordRequest(line.route, request.method ?? '', line.status, elapsed / 1e9);
  }
  return (response) => {
    response.on('close', done);
  };
}
