import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, RequestHandler } from 'express';
import { type Logger, stdSerializers } from 'pino';
import { pinoHttp } from 'pino-http';

const SANE_REQUEST_ID = /^[A-Za-z0-9._~:+/=-]{1,128}$/;

/** The route template a request matched (`/v1/pets/:petId`), or `unmatched`; bounded for labels. */
export function routeOf(request: IncomingMessage): string {
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
  const id = typeof incoming === 'string' && SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
  response.setHeader('X-Request-Id', id);
  return id;
}

/**
 * One log line per request: method, route, status, duration (ms), key id and request id. Never the
 * key or the Authorization header.
 */
export function createRequestLogging(logger: Logger): RequestHandler {
  const line = (request: IncomingMessage, response: ServerResponse, value: { duration?: number }) => ({
    method: request.method,
    route: routeOf(request),
    status: response.statusCode,
    duration: value.duration,
    keyId: (response as unknown as { locals?: { apiKey?: { id: string } } }).locals?.apiKey?.id,
  });
  return pinoHttp({
    logger,
    genReqId: assignRequestId,
    // pino-http builds a child logger bound to the serialised request on every request, even when
    // quiet; the line above carries what is needed, so serialising (and redacting) the request,
    // about a tenth of the gateway's CPU per request, buys nothing.
    wrapSerializers: false,
    serializers: { req: omit, res: omit, err: stdSerializers.err },
    quietReqLogger: true,
    quietResLogger: true,
    customAttributeKeys: { reqId: 'requestId', responseTime: 'duration' },
    customLogLevel: (_request, response, error) => (error !== undefined || response.statusCode >= 500 ? 'error' : 'info'),
    customSuccessObject: line,
    customErrorObject: (request, response, error, value) => ({ ...line(request, response, value), err: error }),
    customSuccessMessage: () => 'request',
    customErrorMessage: () => 'request failed',
  }) as unknown as RequestHandler;
}

function omit(): undefined {
  return undefined;
}
