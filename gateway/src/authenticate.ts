import type { RequestHandler } from 'express';
import { ApiError } from './api-error';
import type { ApiKey, ApiKeyStore } from './api-keys';

// RFC 7235: the scheme is case-insensitive; RFC 6750 token68 characters only.
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
const CHALLENGE = 'Bearer realm="petstore"';

/** The key a request authenticated with, once {@link createAuthenticate} has passed it. */
export function apiKeyOf(locals: Record<string, unknown>): ApiKey {
  return locals.apiKey as ApiKey;
}

/** Reads the bearer token of a request, if it has a well-formed one. */
export function bearerToken(header: string | undefined): string | undefined {
  return header === undefined ? undefined : BEARER.exec(header)?.[1];
}

/** Rejects requests without a known API key (401 with a `WWW-Authenticate` challenge). */
export function createAuthenticate(keys: ApiKeyStore): RequestHandler {
  return (request, response, next) => {
    const token = bearerToken(request.headers.authorization);
    const key = token === undefined ? undefined : keys.find(token);
    if (key === undefined) {
      const challenge = token === undefined ? CHALLENGE : `${CHALLENGE}, error="invalid_token"`;
      const message = token === undefined ? 'missing bearer API key' : 'unknown API key';
      next(new ApiError(401, 'unauthorized', message, { 'WWW-Authenticate': challenge }));
      return;
    }
    response.locals.apiKey = key;
    next();
  };
}
