import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse, STATUS_CODES } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import parseUrl from 'parseurl';
import { ApiError } from './api-error';
import { fieldCount } from './raw-headers';

const MALFORMED = new ApiError(400, 'invalid_request', 'malformed HTTP request');
const HEADERS_TOO_LARGE = new ApiError(431, 'invalid_request', 'request headers too large');
const TIMED_OUT = new ApiError(408, 'invalid_request', 'request not received in time');
const UNKNOWN_METHOD = new ApiError(501, 'invalid_request', 'method not implemented');
const CONNECT = new ApiError(501, 'invalid_request', 'CONNECT is not implemented: this is not a proxy');
const VERSION = new ApiError(505, 'invalid_request', 'HTTP version not supported: send HTTP/1.1');
const NO_PATH = new ApiError(400, 'invalid_request', 'request target has no path');
const BAD_TARGET = new ApiError(400, 'invalid_request', 'request target is not a valid URL');
const NO_HOST = new ApiError(400, 'invalid_request', 'Host: is required in an HTTP/1.1 request');
const TWO_HOSTS = new ApiError(400, 'invalid_request', 'Host: must be given once');
const BAD_HOST = new ApiError(400, 'invalid_request', 'Host: must be a host and optional port');
const UNMET_EXPECTATION = new ApiError(417, 'invalid_request', 'Expect: only 100-continue is supported');

/** RFC 9112 section 3.2: `uri-host [ ":" port ]`, uri-host an IP literal or a reg-name (RFC 3986). */
const HOST_FIELD = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~!$&'()*+,;=%]*)(?::[0-9]*)?$/;
/**
 * A request line as RFC 9112 section 3 has it: method, target and `HTTP/d.d`, one space apart. The
 * method part may begin with the end of the body of the request before it, which llhttp's offsets
 * do not tell apart.
 */
const REQUEST_LINE = /^[^ ]+ [^ ]+ HTTP\/[0-9]\.[0-9]$/;

/**
 * The last response a connection has started, and the one before it: Node answers a connection's
 * requests in order, so once one of them has finished, every response before it has too.
 */
const LAST_RESPONSE = Symbol('lastResponse');
const PREVIOUS_RESPONSE = Symbol('previousResponse');
/** Set once a connection's refusal is decided: Node's parser repeats its error for every later chunk. */
const REFUSED = Symbol('refused');
type Connection = Duplex & { [LAST_RESPONSE]?: ServerResponse; [PREVIOUS_RESPONSE]?: ServerResponse; [REFUSED]?: true };

/** Records `response` as its connection's last started one; two property writes, no listener. */
function track(request: IncomingMessage, response: ServerResponse): void {
  const connection = request.socket as Connection;
  connection[PREVIOUS_RESPONSE] = connection[LAST_RESPONSE];
  connection[LAST_RESPONSE] = response;
}

/**
 * Why a request that parsed cannot be routed, if it cannot. llhttp parses `HTTP/0.9` and
 * `HTTP/2.0` request lines as any other, so the version is checked here (RFC 9112 section 2.3:
 * 505 for a major version other than 1). RFC 9112 section 3.2 wants a 400 for an HTTP/1.1 request
 * without `Host`, for one with more than one (Node keeps the first) and for one whose value is not
 * a host; Node checks none but the first, and answers that with an empty body, so its check is
 * off and this one stands in.
 */
function unroutable(request: IncomingMessage): ApiError | undefined {
  if (request.httpVersionMajor !== 1) return VERSION;
  const hosts = fieldCount(request.rawHeaders, 'host');
  if (hosts > 1) return TWO_HOSTS;
  if (hosts === 0) {
    if (request.httpVersionMinor >= 1) return NO_HOST;
  } else if (!HOST_FIELD.test(request.headers.host!)) {
    return BAD_HOST;
  }
  return targetProblem(request);
}

/**
 * Parses the target once, for everything after (parseurl keeps the result on the request), and
 * says what is wrong with it, if anything:
 * - an absolute-form target goes through Node's `url.parse`, which throws on an authority llhttp
 *   accepts (`http://a:b/`, a port that is no number). Thrown in the 'request' listener, that
 *   would end the process; express's router catches the same throw for its own lookup;
 * - a target that parses without a path (`/\#@!`: a backslash reads as a slash, and `//` starts
 *   a host) would reach express's router, which answers it with an HTML page of its own.
 */
function targetProblem(request: IncomingMessage): ApiError | undefined {
  try {
    return parseUrl(request)?.pathname == null ? NO_PATH : undefined;
  } catch {
    return BAD_TARGET;
  }
}

/** Answers with an Error body and closes the connection: the rest of the request is not read. */
function answerError(response: ServerResponse, error: ApiError): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  const body = error.toJson();
  response.writeHead(error.status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body), Connection: 'close' });
  response.end(body);
}

/**
 * The refusal for bytes llhttp could not parse. It stops at an unknown method (a token it does not
 * know, 501) and at a version other than 1.0, 1.1, 0.9 and 2.0 (505), but also at a request line
 * that is not one at all, which is malformed: the failing request's line, found from where the
 * parser stopped, tells them apart.
 */
function parseRefusal(error: NodeJS.ErrnoException & { rawPacket?: Buffer; bytesParsed?: number }): ApiError {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return HEADERS_TOO_LARGE;
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return TIMED_OUT;
    case 'HPE_INVALID_METHOD':
    case 'HPE_INVALID_VERSION': {
      const { rawPacket, bytesParsed } = error;
      if (rawPacket === undefined || bytesParsed === undefined) return MALFORMED;
      const start = rawPacket.lastIndexOf('\n', Math.max(0, bytesParsed - 1)) + 1;
      const end = rawPacket.indexOf('\r\n', start);
      const line = rawPacket.toString('latin1', start, end < 0 ? rawPacket.length : end);
      if (!REQUEST_LINE.test(line)) return MALFORMED;
      return error.code === 'HPE_INVALID_METHOD' ? UNKNOWN_METHOD : VERSION;
    }
    default:
      return MALFORMED;
  }
}

/**
 * How long a refused connection waits for the client's end once the refusal is written, before it
 * is destroyed (RFC 9112 section 9.6, a lingering close: closed at once, what the client sent since
 * would make the kernel reset the connection, perhaps before the client has read the refusal).
 */
const LINGER_MS = 2000;

/**
 * Writes a refusal as a whole response, as Node would (`Date` included), and closes the connection:
 * when the client ends it, or after {@link LINGER_MS}. Node may have stopped reading the connection
 * (a CONNECT's, handed over while earlier responses were held back by backpressure, is never read
 * again): without the bound it would stay open, and `server.close()` would wait for it for ever.
 */
function writeRefusal(connection: Connection, error: ApiError): void {
  if (!connection.writable) {
    connection.destroy();
    return;
  }
  const body = error.toJson();
  connection.end(
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\nDate: ${new Date().toUTCString()}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  const linger = setTimeout(() => connection.destroy(), LINGER_MS);
  connection.once('close', () => clearTimeout(linger));
}

/**
 * Refuses what follows a connection's requests so far, after their responses (RFC 9112 section
 * 9.3.2: responses go out in request order). When the last request's body has not all arrived,
 * the refusal is about that body and stands as its response, after the responses before it;
 * unless that request's own response has begun, which is then the last word. Node gives a
 * `clientError` listener the socket alone, with no way to queue a response among those it holds,
 * so the refusal waits for the last of them to finish.
 */
function refuseRest(connection: Connection, error: ApiError): void {
  if (connection[REFUSED] === true) return;
  connection[REFUSED] = true;
  const last = connection[LAST_RESPONSE];
  const awaited = last === undefined || last.req.complete || last.headersSent ? last : connection[PREVIOUS_RESPONSE];
  if (awaited === undefined || awaited.writableFinished) {
    writeRefusal(connection, error);
    return;
  }
  awaited.once('finish', () => writeRefusal(connection, error));
  awaited.once('close', () => {
    if (!awaited.writableFinished) connection.destroy();
  });
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
  /**
   * Shutdown has begun: from now on every response closes its connection (`Connection: close`,
   * RFC 9112 section 9.6), the response of a request already in flight included, so that clients
   * reconnect elsewhere. The listener keeps serving until it is closed.
   */
  drain(): void;
}

/**
 * Listens with `app`, within `limits`. Requests that Node rejects before express sees them
 * (malformed request lines, unknown methods and versions, `CONNECT`, oversized headers, a request
 * not received within its timeout, an `Expect` other than `100-continue`) and requests that cannot
 * be routed (see {@link unroutable}) still get a whole response with the Error body, then the
 * connection closes; a refusal of what follows requests on the same connection comes after their
 * responses. None of them reaches `app`, so none is charged to a rate limit: like a malformed
 * request line, they are refused before anything knows whose request it is.
 */
export async function listen(
  app: RequestListener,
  host: string,
  port: number,
  limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS,
): Promise<ListeningServer> {
  let draining = false;
  // Each open connection, so that draining reaches the response each one has in flight.
  const connections = new Set<Connection>();
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
      track(request, response);
      if (draining) response.setHeader('Connection', 'close');
      const problem = unroutable(request);
      if (problem === undefined) app(request, response);
      else answerError(response, problem);
    },
  );
  server.maxConnections = limits.maxConnections;
  server.on('connection', (connection: Connection) => {
    connections.add(connection);
    connection.once('close', () => connections.delete(connection));
  });
  // Without a listener Node answers 417 with an empty body.
  server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    track(request, response);
    answerError(response, UNMET_EXPECTATION);
  });
  // Without a listener Node closes the connection with no answer at all.
  server.on('connect', (_request: IncomingMessage, socket: Duplex) => refuseRest(socket, CONNECT));
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable || error.code === 'ECONNRESET') {
      socket.destroy();
      return;
    }
    refuseRest(socket, parseRefusal(error));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    drain() {
      draining = true;
      // A connection's responses go out in order: its last one started is the one to close it.
      for (const connection of connections) {
        const last = connection[LAST_RESPONSE];
        if (last !== undefined && !last.headersSent) last.setHeader('Connection', 'close');
      }
    },
  };
}

/**
 * Stops accepting connections and resolves once every in-flight request has been answered.
 * Node closes an idle keep-alive connection only when its idle timeout fires, so idle ones are
 * swept every 50 ms: a connection closes as soon as its last response is out.
 *
 * Node counts a connection whose request has arrived but has not been read yet as idle, and
 * `server.close()` closes idle connections at once; closing the listener resets connections not
 * yet accepted: called in a turn of the event loop before its poll phase has read a request that
 * has arrived (a drain that begins in the timers phase), it would reset that request. So the
 * listener closes, and each sweep runs, just after the loop's next poll phase, which accepts the
 * connections waiting and reads what they received.
 */
export function closeGracefully(server: Server): Promise<void> {
  const sweep = setInterval(() => setImmediate(() => server.closeIdleConnections()), 50);
  return new Promise<void>((resolve, reject) => {
    setImmediate(() => server.close((error) => (error ? reject(error) : resolve())));
  }).finally(() => clearInterval(sweep));
}
