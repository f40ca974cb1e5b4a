import type { RequestHandler } from 'express';
import { ApiError } from '../http/api-error';
import type { ApiKey, KeyRefusal } from './api-keys';

// RFC 7235: the scheme is case-insensitive; RFC 6750 token68 characters only.
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
const BEARER_SCHEME = /^bearer(?: |$)/i;
const CHALLENGE = 'Bearer realm="petstore"';

/** The key the rate-limit edge identified, if the request had a valid one. */
export function identifiedKey(locals: Record<string, unknown>): ApiKey | undefined {
  return locals.apiKey as ApiKey | undefined;
}

/** Why the rate-limit edge did not accept the request's bearer secret, if it sent one. */
export function keyRefusal(locals: Record<string, unknown>): KeyRefusal | undefined {
  return locals.keyRefusal as KeyRefusal | undefined;
}

// Each says only what the holder of the secret already knows about it, nothing of other keys.
const REFUSAL_MESSAGES: Readonly<Record<KeyRefusal, string>> = {
  unknown: 'unknown API key',
  checksum: 'malformed API key: its checksum does not match (was it copied whole?)',
  expired: 'API key expired',
  revoked: 'API key revoked',
};

/** Reads the bearer token of a request, if it has a well-formed one. */
export function bearerToken(header: string | undefined): string | undefined {
  return header === undefined ? undefined : BEARER.exec(header)?.[1];
}

/**
 * Rejects requests without a known API key: 401 with a `WWW-Authenticate` challenge, which adds
 * `error="invalid_token"` whenever a Bearer credential was sent, malformed, unknown, expired or
 * revoked, and a message saying which. A request with no credential, or with another scheme, gets
 * the bare challenge (RFC 6750 section 3.1).
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
  const message =
    bearerToken(header) === undefined ? 'malformed bearer API key' : REFUSAL_MESSAGES[keyRefusal(response.locals) ?? 'unknown'];
  next(new ApiError(401, 'unauthorized', message, { 'WWW-Authenticate': `${CHALLENGE}, error="invalid_token"` }));
};
