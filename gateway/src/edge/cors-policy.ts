import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CorsOrigins } from '../config';

/** Request headers a page may send, beyond the CORS-safelisted ones: every header the API reads. */
export const CORS_ALLOWED_HEADERS: readonly string[] = ['Authorization', 'Content-Type', 'Idempotency-Key', 'If-Match', 'If-None-Match', 'X-Request-Id'];

/**
 * Response headers a page's script may read, beyond the CORS-safelisted ones (Content-Type, ...):
 * every header the API documents. Without this a script could not see its rate limit, its
 * `Retry-After`, the next page's `Link`, a created pet's `Location` or a pet's `ETag`.
 */
export const CORS_EXPOSED_HEADERS: readonly string[] = [
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'RateLimit',
  'RateLimit-Policy',
  'Retry-After',
  'Link',
  'Location',
  'ETag',
  'Accept-Patch',
  'Deprecation',
  'Sunset',
  'X-Request-Id',
  'Idempotent-Replayed',
  'WWW-Authenticate',
  'Allow',
];

/** How long a browser may reuse a preflight's answer; Chromium caps it at 7200 s, Firefox at 86400 s. */
export const CORS_MAX_AGE_SECONDS = 7200;

/** The gateway's CORS policy, applied by the rate-limit edge to every response on the public port. */
export interface CorsPolicy {
  /**
   * Sets the CORS headers of the response to `request` before anything else can answer it, so
   * every status carries them: 2xx, 4xx, 429s and bans from the edge, 5xx from the error handler.
   * An allowed origin (any, with `*`) gets `Access-Control-Allow-Origin` and
   * `Access-Control-Expose-Headers`; with a list, every response says `Vary: Origin`, since it
   * differs by origin. Returns true for a preflight from an allowed origin: an OPTIONS with an
   * `Origin` and an `Access-Control-Request-Method`, which the caller answers with
   * {@link CorsPolicy.preflightHeaders}. An OPTIONS without them is an ordinary request.
   */
  apply(request: IncomingMessage, response: ServerResponse): boolean;
  /** The headers of a 204 answer to a preflight: allowed methods and headers, and the max age. */
  readonly preflightHeaders: Readonly<Record<string, string>>;
}

/**
 * The policy for `origins`, allowing `methods` (every method the gateway serves); undefined for
 * an empty list: no CORS headers at all, as before CORS_ORIGINS existed. No
 * `Access-Control-Allow-Credentials`: the API authenticates with an `Authorization` header that the
 * page sets itself, never with cookies, and without it `*` cannot let a site ride a user's session.
 */
export function createCorsPolicy(origins: CorsOrigins, methods: readonly string[]): CorsPolicy | undefined {
  if (origins !== '*' && origins.length === 0) return undefined;
  const any = origins === '*';
  const allowed = new Set(any ? [] : origins);
  const exposed = CORS_EXPOSED_HEADERS.join(', ');
  return {
    apply(request, response) {
      const { origin } = request.headers;
      if (!any) {
        response.setHeader('Vary', 'Origin');
        if (origin === undefined || !allowed.has(origin)) return false;
      }
      response.setHeader('Access-Control-Allow-Origin', any ? '*' : origin!);
      response.setHeader('Access-Control-Expose-Headers', exposed);
      return request.method === 'OPTIONS' && origin !== undefined && request.headers['access-control-request-method'] !== undefined;
    },
    preflightHeaders: Object.freeze({
      'Access-Control-Allow-Methods': methods.join(', '),
      'Access-Control-Allow-Headers': CORS_ALLOWED_HEADERS.join(', '),
      'Access-Control-Max-Age': String(CORS_MAX_AGE_SECONDS),
    }),
  };
}
