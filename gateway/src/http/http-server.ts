import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import parseUrl from 'parseurl';
import { ApiError } from './api-error';

const MALFORMED = new ApiError(400, 'invalid_request', 'malformed HTTP request').toJson();
const HEADERS_TOO_LARGE = new ApiError(431, 'invalid_request', 'request headers too large').toJson();
const TIMED_OUT = new ApiError(408, 'invalid_request', 'request not received in time').toJson();
const NO_PATH = new ApiError(400, 'invalid_request', 'request target has no path').toJson();

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
 * (malformed request lines, oversized headers, a request not received within its timeout) still
 * get the Error body, then the connection closes.
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
    },
    // A target that parses without a path (`/\#@!`: a backslash reads as a slash, and `//` starts
    // a host) would reach express's router, which answers it with an HTML page of its own.
    (request, response) => {
      if (parseUrl(request)?.pathname != null) {
        app(request, response);
        return;
      }
      response.writeHead(400, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(NO_PATH), Connection: 'close' });
      response.end(NO_PATH);
    },
  );
  server.maxConnections = limits.maxConnections;
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
