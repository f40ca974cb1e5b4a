import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import parseUrl from 'parseurl';
import { ApiError } from './api-error';
import { fieldCount } from './raw-headers';

const MALFORMED = new ApiError(400, 'invalid_request', 'malformed HTTP request').toJson();
const HEADERS_TOO_LARGE = new ApiError(431, 'invalid_request', 'request headers too large').toJson();
const TIMED_OUT = new ApiError(408, 'invalid_request', 'request not received in time').toJson();
const NO_PATH = new ApiError(400, 'invalid_request', 'request target has no path').toJson();
const NO_HOST = new ApiError(400, 'invalid_request', 'Host: is required in an HTTP/1.1 request').toJson();
const TWO_HOSTS = new ApiError(400, 'invalid_request', 'Host: must be given once').toJson();
const UNMET_EXPECTATION = new ApiError(417, 'invalid_request', 'Expect: only 100-continue is supported').toJson();

/**
 * Why a request that parsed cannot be routed, as its Error body, if it cannot. RFC 9112 section 3.2
 * wants a 400 for an HTTP/1.1 request without `Host` and for one with more than one (Node keeps
 * the first). Node's own check for a missing Host answers with an empty body, so it is off and
 * this one stands in.
 */
function unroutable(request: IncomingMessage): string | undefined {
  const hosts = fieldCount(request.rawHeaders, 'host');
  if (hosts > 1) return TWO_HOSTS;
  if (hosts === 0 && request.httpVersionMajor === 1 && request.httpVersionMinor >= 1) return NO_HOST;
  // A target that parses without a path (`/\#@!`: a backslash reads as a slash, and `//` starts
  // a host) would reach express's router, which answers it with an HTML page of its own.
  if (parseUrl(request)?.pathname == null) return NO_PATH;
  return undefined;
}

/** Answers with an Error body and closes the connection: the rest of the request is not read. */
function answerError(response: ServerResponse, status: number, body: string): void {
  response.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body), Connection: 'close' });
  response.end(body);
}

/**
 * How long a client may take, and how many may be connected at once. Node's defaults (headers in
 * 60 s, the whole request in 300 s, checked only every 30 s, no connection cap) let 500 clients
 * trickling headers hold their connections for 88 s.
 */
export interface ConnectionLimits {
  /** From a connection's first byte of a request to the end of its headers. */
  readonly headersTimeoutMs: number;
  /** From the first byte of a request to the end of its body. */
  readonly requestTimeoutMs: number;
  /** How long an idle keep-alive connection is kept; above the load balancer's own idle timeout. */
  readonly keepAliveTimeoutMs: number;
  /** Connections beyond this are closed as they arrive. */
  readonly maxConnections: number;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = Object.freeze({
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 65_000,
  maxConnections: 4096,
});

export interface ListeningServer {
  readonly server: Server;
  readonly port: number;
}

/**
 * Listens with `app`, within `limits`. Requests that Node rejects before express sees them
 * (malformed request lines, oversized headers, a request not received within its timeout, an
 * `Expect` other than `100-continue`) and requests that cannot be routed (see {@link unroutable})
 * still get the Error body, then the connection closes. None of them reaches `app`, so none is
 * charged to a rate limit: like a malformed request line, they are refused before anything knows
 * whose request it is.
 */
export async function listen(
  app: RequestListener,
  host: string,
  port: number,
  limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS,
): Promise<ListeningServer> {
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      // Node enforces both timeouts only when it checks, every 30 s by default.
      connectionsCheckingInterval: Math.max(50, Math.min(1000, limits.headersTimeoutMs / 4)),
      requireHostHeader: false,
    },
    (request, response) => {
      const problem = unroutable(request);
      if (problem === undefined) app(request, response);
      else answerError(response, 400, problem);
    },
  );
  server.maxConnections = limits.maxConnections;
  // Without a listener Node answers 417 with an empty body.
  server.on('checkExpectation', (_request: IncomingMessage, response: ServerResponse) => answerError(response, 417, UNMET_EXPECTATION));
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    const [status, body] =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? ['431 Request Header Fields Too Large', HEADERS_TOO_LARGE]
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? ['408 Request Timeout', TIMED_OUT]
          : ['400 Bad Request', MALFORMED];
    socket.end(
      `HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return { server, port: (server.address() as AddressInfo).port };
}

/**
 * Stops accepting connections and resolves once every in-flight request has been answered.
 * Node closes an idle keep-alive connection only when its idle timeout fires, so idle ones are
 * swept every 50 ms: a connection closes as soon as its last response is out.
 */
export function closeGracefully(server: Server): Promise<void> {
  const sweep = setInterval(() => server.closeIdleConnections(), 50);
  return new Promise<void>((resolve, reject) => {
    server.close((error) => (error ? reject(error) : resolve()));
    server.closeIdleConnections();
  }).finally(() => clearInterval(sweep));
}
