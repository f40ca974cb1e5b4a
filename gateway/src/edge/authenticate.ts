import type { RequestHandler } from 'express';
import { ApiError } from '../http/api-error';
import type { ApiKey } from './api-keys';

// RFC 7235: the scheme is case-insensitive; RFC 6750 token68 characters only.
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
const BEARER_SCHEME = /^bearer(?: |$)/i;
const CHALLENGE = 'Bearer realm="petstore"';

/** The key the rate-limit edge identified, if the request had a valid one. */
export function identifiedKey(locals: Record<string, unknown>): ApiKey | undefined {
  return locals.apiKey as ApiKey | undefined;
}

/** Reads the bearer token of a request, if it has a well-formed one. */
export function bearerToken(header: string | undefined): string | undefined {
  return header === undefined ? undefined : BEARER.exec(header)?.[1];
}

/**
 * Rejects requests without a known API key: 401 with a `WWW-Authenticate` challenge, which adds
 * `error="invalid_token"` whenever a Bearer credential was sent, malformed or unknown. A request
 * with no credential, or with another scheme, gets the bare challenge (RFC 6750 section 3.1).
 */
export const requireApiKey: RequestHandler = (request, response, next) => {
  if (identifiedKey(response.locals) !== undefined) {
    next();
    return;
  }
  const header = request.headers.authorization;
  if (header === undefined || !BEARER_SCHEME.test(header)) {
    next(new ApiError(401, 'unauthorized', 'missing bearer API key', { 'WWW-Authenticate': CHALLENGE }));
    return;
  }
  const message = bearerToken(header) === undefined ? 'malformed bearer API key' : 'unknown API key';
  next(new ApiError(401, 'unauthorized', message, { 'WWW-Authenticate': `${CHALLENGE}, error="invalid_token"` }));
};
