import type { RequestHandler } from 'express';
import { ApiError } from './api-error';
import type { ApiKey } from './api-keys';

// RFC 7235: the scheme is case-insensitive; RFC 6750 token68 characters only.
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
const CHALLENGE = 'Bearer realm="petstore"';

/** The key a request authenticated with, once {@link requireApiKey} has passed it. */
export function apiKeyOf(locals: Record<string, unknown>): ApiKey {
  return locals.apiKey as ApiKey;
}

/** The key the rate-limit edge identified, if the request had a valid one. */
export function identifiedKey(locals: Record<string, unknown>): ApiKey | undefined {
  return locals.apiKey as ApiKey | undefined;
}

/** Reads the bearer token of a request, if it has a well-formed one. */
export function bearerToken(header: string | undefined): string | undefined {
  return header === undefined ? undefined : BEARER.exec(header)?.[1];
}

/** Rejects requests without a known API key (401 with a `WWW-Authenticate` challenge). */
export const requireApiKey: RequestHandler = (request, response, next) => {
  if (identifiedKey(response.locals) !== undefined) {
    next();
    return;
  }
  const missing = bearerToken(request.headers.authorization) === undefined;
  const challenge = missing ? CHALLENGE : `${CHALLENGE}, error="invalid_token"`;
  next(new ApiError(401, 'unauthorized', missing ? 'missing bearer API key' : 'unknown API key', { 'WWW-Authenticate': challenge }));
};
