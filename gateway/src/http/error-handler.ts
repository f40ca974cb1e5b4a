import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Metadata } from '@grpc/grpc-js';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { ApiError } from './api-error';
import { grpcStatusToHttp } from './grpc-status-to-http';
import { ABORTED, TOO_LARGE } from './json-body';
import { sendJson } from './send-json';

/** Called with every error that became a 5xx `internal`, so a bug is seen, not swallowed. */
export type InternalErrorListener = (error: unknown) => void;

/** Express's final handler for unknown paths: 404 with the Error body. */
export const notFound: RequestHandler = (_request, _response, next) => {
  next(new ApiError(404, 'not_found', 'no such resource'));
};

/**
 * Renders anything thrown on a request path as the Error body, never HTML or a stack trace. A
 * refusal given before the request's body has all arrived (401, 413, 415, …) closes the
 * connection once written, rather than keep reading a body nobody wants.
 */
export function createErrorHandler(onInternal: InternalErrorListener): ErrorRequestHandler {
  return (error: unknown, request, response, _next) => {
    const apiError = toApiError(error);
    if (apiError.code === 'internal') onInternal(error);
    sendApiError(request, response, apiError);
  };
}

/** Answers any method a route does not serve: 405 with `Allow`. */
export function methodNotAllowed(allow: string): ApiError {
  return new ApiError(405, 'method_not_allowed', `method not allowed; allowed: ${allow}`, { Allow: allow });
}

/**
 * Answers with the Error body, on top of the headers already set (rate limits, CORS, a
 * deprecation), closing the connection afterwards when the request's body has not all arrived. A
 * response whose head has already gone out can only be cut off.
 */
export function sendApiError(request: IncomingMessage, response: ServerResponse, apiError: ApiError): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  const { headers } = apiError;
  for (const name in headers) response.setHeader(name, headers[name]!);
  if (!request.complete) response.setHeader('Connection', 'close');
  sendJson(response, apiError.status, apiError.toJson());
}

// raw-body (readJsonBody's reader) and express raise http-errors with `status` and, for body problems, `type`.
const HTTP_ERROR_TYPES: Readonly<Record<string, ApiError>> = {
  'entity.too.large': TOO_LARGE,
  'request.aborted': ABORTED,
  'request.size.invalid': new ApiError(400, 'invalid_request', 'body: length does not match Content-Length'),
};

/**
 * Whether `error` is the one express's router throws when it cannot percent-decode a path
 * parameter. It is thrown while matching, before any handler runs, and names no parameter: a
 * route that wants its parameter named catches it in an error handler of its own router.
 */
export function isUndecodableParameter(error: unknown): boolean {
  return error instanceof URIError && (error as { status?: unknown }).status === 400;
}

/** Normalises anything thrown into an {@link ApiError}. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (isGrpcError(error)) return grpcStatusToHttp(error.code, error.details, error.metadata);
  if (isUndecodableParameter(error)) return ApiError.invalid('path', 'malformed percent-encoding');
  if (error !== null && typeof error === 'object') {
    const { type, status } = error as { type?: unknown; status?: unknown };
    if (typeof type === 'string' && HTTP_ERROR_TYPES[type] !== undefined) return HTTP_ERROR_TYPES[type];
    if (typeof status === 'number' && status >= 400 && status < 500) {
      return new ApiError(400, 'invalid_request', 'malformed request');
    }
  }
  return new ApiError(500, 'internal', 'internal error');
}

function isGrpcError(error: unknown): error is { code: number; details: string; metadata?: Metadata } {
  return (
    error instanceof Error &&
    typeof (error as { code?: unknown }).code === 'number' &&
    typeof (error as { details?: unknown }).details === 'string'
  );
}
