import { Agent, type ClientRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { pipeline } from 'node:stream';
import { type Span, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
} from '@opentelemetry/semantic-conventions';
import { NON_RECORDING_TRACER, startChildSpan, traceHeaders } from '@petstore/runtime';
import type { Request, RequestHandler, Response } from 'express';
import { createProxyMiddleware, type Plugin, proxyEventsPlugin } from 'http-proxy-middleware';
import type { Logger } from 'pino';
import { contextOf } from '../edge/request-context';
import { ApiError } from '../http/api-error';
import { sendApiError } from '../http/error-handler';
import { BodyLimit } from './body-limit';
import { forwardHeaders } from './forwarded-headers';
import { connectionOptions, isHopByHop } from './hop-by-hop';
import type { ProxyRoute } from './routes-file';
import { upstreamFailureToHttp } from './upstream-failure';

/** Connections open to one upstream at most; requests beyond wait for one to free up. */
export const MAX_UPSTREAM_SOCKETS = 64;
/** Idle pooled connections close after this: before Node's default 5 s keep-alive timeout upstream. */
const IDLE_SOCKET_MS = 4000;
const CHUNKED = /^\s*chunked\s*$/i;
const CORS_RESPONSE_HEADER = /^access-control-/;

export interface ProxyRoutesOptions {
  readonly routes: readonly ProxyRoute[];
  readonly logger: Logger;
  /**
   * True when the gateway has a CORS policy (CORS_ORIGINS): it then holds for proxied prefixes
   * too, and an upstream's own `Access-Control-*` response headers are dropped.
   */
  readonly cors?: boolean;
  /** Starts the client span of each upstream call; default: none recorded. */
  readonly tracer?: Tracer;
}

/** One configured prefix: where express mounts it, and its handlers. */
export interface MountedRoute {
  readonly prefix: string;
  readonly handlers: readonly RequestHandler[];
}

/**
 * The handlers of every configured route, mounted after authentication: admission (plan, method,
 * declared body size), then http-proxy-middleware to the upstream, over a keep-alive agent per
 * upstream (host and port) with at most {@link MAX_UPSTREAM_SOCKETS} connections.
 */
export function createProxyRoutes({ routes, logger, cors = false, tracer = NON_RECORDING_TRACER }: ProxyRoutesOptions): MountedRoute[] {
  const agents = new Map<string, Agent>();
  const calls = new UpstreamCalls(tracer);
  return routes.map((route) => {
    let agent = agents.get(route.upstream.host);
    if (agent === undefined) {
      agent = new Agent({ keepAlive: true, maxSockets: MAX_UPSTREAM_SOCKETS, maxFreeSockets: MAX_UPSTREAM_SOCKETS, timeout: IDLE_SOCKET_MS });
      agents.set(route.upstream.host, agent);
    }
    return { prefix: route.prefix, handlers: [admission(route, calls), proxy(route, agent, logger, cors, calls)] };
  });
}

/**
 * Refuses, before the upstream is contacted, what the route does not take: a plan it does not
 * list (403), a method it does not allow (405), a declared body over its limit (413), and a body
 * framing http-proxy would forward wrongly (400). Then shapes the headers the upstream receives.
 */
function admission(route: ProxyRoute, calls: UpstreamCalls): RequestHandler {
  const allow = route.methods.join(', ');
  const forbidden = new ApiError(403, 'forbidden', `this API key's plan may not use ${route.prefix}`);
  const notAllowed = new ApiError(405, 'method_not_allowed', `method not allowed; allowed: ${allow}`, { Allow: allow });
  const tooLarge = tooLargeError(route);
  return (request, response, next) => {
    const context = contextOf(request);
    context.route = route.prefix;
    const caller = context.key!;
    if (route.plans !== undefined && !route.plans.includes(caller.plan)) throw forbidden;
    if (!route.methods.includes(request.method)) throw notAllowed;
    if (tooLarge !== undefined && Number(request.headers['content-length'] ?? 0) > route.bodyLimitBytes!) throw tooLarge;
    const framing = request.headers['transfer-encoding'];
    // http-proxy gives a DELETE or OPTIONS without Content-Length a `Content-Length: 0` head and
    // then still pipes the body after it: the upstream would read those bytes as another request.
    if (framing !== undefined && (!CHUNKED.test(framing) || request.method === 'DELETE' || request.method === 'OPTIONS')) {
      throw ApiError.invalid('Transfer-Encoding', 'only chunked, and not on DELETE or OPTIONS');
    }
    forwardHeaders(request, caller, context.requestId);
    calls.start(request, route, context.span);
    next();
  };
}

function tooLargeError(route: ProxyRoute): ApiError | undefined {
  return route.bodyLimitBytes === undefined
    ? undefined
    : new ApiError(413, 'payload_too_large', `body: larger than ${route.bodyLimitBytes} bytes`);
}

/**
 * http-proxy-middleware does the proxying: the upstream URL and path, the agent, piping the body,
 * `proxyTimeout` (the upstream socket's idle time), and aborting the upstream request when the
 * client aborts its upload. Its default plugins are ejected: they log through their own logger,
 * answer errors with text, and build a URL per response just to log it.
 *
 * Three things it cannot do are done here, each shown by a test in proxy-routes.test.ts:
 * - the response is relayed by hand (`selfHandleResponse`), because its outgoing passes copy
 *   every upstream header over the gateway's own (rate-limit headers included), hop-by-hop
 *   fields too, and then set `Connection` from the client's request, which would also undo
 *   `Connection: close` while draining;
 * - a client that leaves while the upstream has not answered yet aborts the upstream request
 *   (http-proxy only listens for an aborted upload);
 * - a body of unknown length is counted on its way, through a pass inserted before http-proxy's
 *   `stream` pass: the `buffer` option is one stream for every request, and no other hook sees the
 *   body before it is piped.
 */
function proxy(route: ProxyRoute, agent: Agent, logger: Logger, cors: boolean, calls: UpstreamCalls): RequestHandler {
  // proxyTimeout aborts the request, which then fails like a reset one: this tells them apart.
  const timedOut = new WeakSet<IncomingMessage>();
  const tooLarge = tooLargeError(route);
  const plugins: Plugin[] = [proxyEventsPlugin];
  if (tooLarge !== undefined) plugins.push(limitBody(route.bodyLimitBytes!, tooLarge));

  const watch = (proxyReq: ClientRequest, request: IncomingMessage, response: ServerResponse): void => {
    proxyReq.once('timeout', () => timedOut.add(request));
    if (response.writableEnded || response.destroyed) {
      proxyReq.destroy();
      return;
    }
    response.once('close', () => {
      calls.end(request, 'canceled');
      if ((proxyReq as ClientRequest & { res?: IncomingMessage }).res?.complete !== true) proxyReq.destroy();
    });
  };

  const relay = (proxyRes: IncomingMessage, request: IncomingMessage, response: ServerResponse): void => {
    calls.end(request, proxyRes.statusCode!);
    if (response.headersSent) {
      // The gateway has answered already (a body over the limit).
      proxyRes.destroy();
      return;
    }
    const copied: string[] = [];
    try {
      const connection = connectionOptions(proxyRes.headers);
      for (const name in proxyRes.headers) {
        if (isHopByHop(name, connection) || (cors && CORS_RESPONSE_HEADER.test(name))) continue;
        // The upstream's reasons to vary join the gateway's `Vary: Origin` (express's `vary`).
        if (name === 'vary' && response.hasHeader(name)) (response as Response).vary(proxyRes.headers.vary!);
        // The gateway's own headers (rate limits, request id, Connection, CORS) win.
        else if (!response.hasHeader(name)) {
          response.setHeader(name, proxyRes.headers[name]!);
          copied.push(name);
        }
      }
      // The head is written here, not at the body's first write, and as that write would (an empty
      // reason phrase gets the status's own): Node's client parser takes a status below 100 and a
      // reason phrase with a DEL that its writer refuses, and `vary` refuses a Vary that is no list
      // of names. This runs in http-proxy's 'response' listener, the first write in a 'data'
      // listener: thrown in either, nothing would catch it and the process would end.
      response.statusMessage = proxyRes.statusMessage ?? '';
      response.writeHead(proxyRes.statusCode!);
    } catch (error) {
      proxyRes.destroy();
      for (const name of copied) response.removeHeader(name);
      // writeHead keeps a refused reason phrase, and would refuse it again for the 502.
      response.statusMessage = '';
      logger.warn({ err: error, route: route.prefix, requestId: contextOf(request).requestId }, 'upstream response not relayable');
      sendApiError(request, response, upstreamFailureToHttp('failed'));
      return;
    }
    pipeline(proxyRes, response, (error) => {
      if (error !== undefined) logger.warn({ err: error, route: route.prefix, requestId: contextOf(request).requestId }, 'proxied response cut off');
    });
  };

  const fail = (error: Error, request: IncomingMessage, response: unknown): void => {
    const answer = response as Response;
    calls.end(request, timedOut.has(request) ? 'timeout' : 'failed');
    if (answer.writableEnded) return;
    logger.warn({ err: error, route: route.prefix, requestId: contextOf(request).requestId }, 'upstream request failed');
    sendApiError(request as Request, answer, upstreamFailureToHttp(timedOut.has(request) ? 'timeout' : 'failed'));
  };

  return createProxyMiddleware({
    target: route.upstream.href,
    agent,
    changeOrigin: true,
    proxyTimeout: route.timeoutMs,
    selfHandleResponse: true,
    ejectPlugins: true,
    plugins,
    on: { proxyReq: watch, proxyRes: relay, error: fail },
  }) as unknown as RequestHandler;
}

/**
 * The calls in flight to upstreams: each carries the request's trace context (`traceparent`,
 * replacing any the client sent) and, when the request is traced, has a client span (HTTP semantic
 * conventions) that ends with the upstream's status or the call's failure.
 */
class UpstreamCalls {
  private readonly spans = new WeakMap<IncomingMessage, Span>();

  constructor(private readonly tracer: Tracer) {}

  /** Sets the trace fields of the upstream request, whose headers `request`'s are (see forwardHeaders). */
  start(request: Request, route: ProxyRoute, parent: Span): void {
    const { upstream } = route;
    // The attributes are built only for a recorded span: an untraced request pays nothing for them.
    const span = parent.isRecording()
      ? startChildSpan(this.tracer, parent, request.method, {
          [ATTR_HTTP_REQUEST_METHOD]: request.method,
          [ATTR_SERVER_ADDRESS]: upstream.hostname,
          [ATTR_SERVER_PORT]: upstream.port === '' ? 80 : Number(upstream.port),
          [ATTR_URL_FULL]: `${upstream.origin}${upstream.pathname.replace(/\/$/, '')}${request.url.split('?')[0]}`,
        })
      : undefined;
    const { traceparent, tracestate } = traceHeaders(span ?? parent);
    const { headers } = request;
    delete headers.tracestate;
    if (traceparent === undefined) delete headers.traceparent;
    else headers.traceparent = traceparent;
    if (tracestate !== undefined) headers.tracestate = tracestate;
    if (span !== undefined) this.spans.set(request, span);
  }

  /** Ends the call's span, if it has one still open: with the upstream's status, or how it failed. */
  end(request: IncomingMessage, outcome: number | 'timeout' | 'failed' | 'canceled'): void {
    const span = this.spans.get(request);
    if (span === undefined) return;
    this.spans.delete(request);
    if (typeof outcome === 'number') {
      span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, outcome);
      if (outcome >= 400) {
        span.setAttribute(ATTR_ERROR_TYPE, String(outcome));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
    } else {
      span.setAttribute(ATTR_ERROR_TYPE, outcome);
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  }
}

interface PassHost {
  before(type: 'web', passName: 'stream', pass: (request: Request, response: Response, options: { buffer?: NodeJS.ReadableStream }) => void): void;
}

/** Pipes a body of unknown length through a {@link BodyLimit}; a Content-Length was checked on arrival. */
function limitBody(limit: number, tooLarge: ApiError): Plugin {
  return (proxyServer) => {
    (proxyServer as unknown as PassHost).before('web', 'stream', (request, response, options) => {
      if (request.headers['transfer-encoding'] === undefined) return;
      options.buffer = request.pipe(new BodyLimit(limit, () => sendApiError(request, response, tooLarge)));
    });
  };
}
