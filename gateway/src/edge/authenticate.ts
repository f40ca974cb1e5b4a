import type { IncomingMessage } from 'node:http';
import { ApiError } from '../http/api-error';
import { fieldCount } from '../http/raw-headers';
import type { ApiKey, ApiKeyDirectory, KeyRefusal } from '../keys/api-keys';

// RFC 7235: the scheme is case-insensitive; RFC 6750 token68 characters only.
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
/** The Bearer scheme, whatever follows it: a tab or another character than a space is a malformed credential, not another scheme. */
const BEARER_SCHEME = /^bearer(?![!#$%&'*+\-.^_`|~0-9A-Za-z])/i;
const CHALLENGE = 'Bearer realm="petstore"';
const INVALID_TOKEN = `${CHALLENGE}, error="invalid_token"`;

const unauthorized = (message: string, challenge: string): ApiError =>
  new ApiError(401, 'unauthorized', message, { 'WWW-Authenticate': challenge });

/** A request with no credential, or with another scheme: the bare challenge (RFC 6750 section 3.1). */
const MISSING = unauthorized('missing bearer API key', CHALLENGE);
const MALFORMED = unauthorized('malformed bearer API key', INVALID_TOKEN);
// Each says only what the holder of the secret already knows about it, nothing of other keys.
const REFUSED: Readonly<Record<KeyRefusal, ApiError>> = {
  unknown: unauthorized('unknown API key', INVALID_TOKEN),
  checksum: unauthorized('malformed API key: its checksum does not match (was it copied whole?)', INVALID_TOKEN),
  expired: unauthorized('API key expired', INVALID_TOKEN),
  revoked: unauthorized('API key revoked', INVALID_TOKEN),
};
/**
 * Node keeps the first of two Authorization fields: which credential the client meant is anyone's
 * guess, so neither is used.
 */
export const AMBIGUOUS_CREDENTIALS = new ApiError(400, 'invalid_request', 'Authorization: must be given once');

/** Reads the bearer token of an Authorization field, if it is a well-formed one. */
export function bearerToken(header: string | undefined): string | undefined {
  return header === undefined ? undefined : BEARER.exec(header)?.[1];
}

/**
 * The API key a request's `Authorization: Bearer` field names, if it is in force at `now` (ms
 * since the epoch); otherwise the refusal the request gets where a key is required: 401 with a
 * `WWW-Authenticate` challenge that adds `error="invalid_token"` whenever a Bearer credential was
 * sent (malformed, unknown, expired or revoked, and a message saying which), or
 * {@link AMBIGUOUS_CREDENTIALS} for two Authorization fields. The refusals are made once: this is
 * on every request's path.
 */
export function authenticate(request: IncomingMessage, apiKeys: ApiKeyDirectory, now: number): ApiKey | ApiError {
  const header = request.headers.authorization;
  if (header === undefined) return MISSING;
  if (fieldCount(request.rawHeaders, 'authorization') > 1) return AMBIGUOUS_CREDENTIALS;
  const token = bearerToken(header);
  if (token === undefined) return BEARER_SCHEME.test(header) ? MALFORMED : MISSING;
  const identified = apiKeys.identify(token, now);
  return typeof identified === 'object' ? identified : REFUSED[identified];
}
