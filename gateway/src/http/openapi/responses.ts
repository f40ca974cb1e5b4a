/**
 * The responses and response headers the document's operations share: Error responses with an
 * example per code, the errors every /v1 operation can give, and the rate-limit and deprecation
 * header fields. Each is declared once, so the operations and the introduction say the same.
 */
import type { ErrorCode } from '../api-error';
import { SUNSET_HTTP_DATE } from '../deprecation';
import { EXAMPLE_MESSAGES, exampleError } from './schemas';

/** A response of Error bodies with `codes`; `messages` gives an operation's own example message for a code. */
export const error = (description: string, codes: readonly ErrorCode[], messages: Partial<Record<ErrorCode, string>> = {}) => ({
  description: `${description} Error codes: ${codes.join(', ')}.`,
  content: {
    'application/json': {
      schema: { $ref: '#/components/schemas/Error' },
      examples: Object.fromEntries(codes.map((code) => [code, { value: { ...exampleError(code), message: messages[code] ?? EXAMPLE_MESSAGES[code] } }])),
    },
  },
});

/** The errors the pets operations share; the proxied routes take some of them. */
export const commonErrors = {
  '401': {
    ...error('Missing or unknown API key.', ['unauthorized']),
    headers: {
      'WWW-Authenticate': {
        schema: { type: 'string' },
        required: true,
        description: '`Bearer realm="petstore"`, with `error="invalid_token"` when a Bearer credential was sent.',
      },
    },
  },
  '403': error('The pet service refused the call.', ['forbidden']),
  '405': {
    ...error('Known path, other method.', ['method_not_allowed']),
    headers: { Allow: { schema: { type: 'string' }, required: true } },
  },
  '429': error('Over the rate limit, or the key is temporarily banned.', ['rate_limited', 'api_key_banned']),
  '500': error('Unexpected failure.', ['internal']),
  '503': {
    ...error('The pet service (or its store) is unavailable or did not answer in time, or it is over capacity and shed the request.', ['service_unavailable']),
    headers: {
      'Retry-After': {
        schema: { type: 'integer', minimum: 1 },
        required: true,
        description: 'Seconds until a retry may succeed; on every 503.',
        example: 1,
      },
    },
  },
  '504': error('The pet service did not answer in time.', ['gateway_timeout']),
};

const integerHeader = (description: string, example: number) => ({ schema: { type: 'integer', minimum: 0 }, description, example });
/** The rate-limit fields every /v1 response carries, whatever its status and route. */
export const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': integerHeader('Limit of the window closest to exhaustion; 0 during a ban.', 60),
  'X-RateLimit-Remaining': integerHeader('Requests left in that window; 0 on a 429 from the rate limiter.', 59),
  'X-RateLimit-Reset': integerHeader('Unix time, in seconds, at which that window (or a ban) ends.', 1795219260),
  'RateLimit-Policy': {
    schema: { type: 'string' },
    description:
      'draft-ietf-httpapi-ratelimit-headers-10: each window, its quota `q` and its length `w` in seconds; during a ban a `"ban";q=0;w=<seconds>` entry is added.',
    example: '"minute";q=60;w=60, "day";q=1000;w=86400',
  },
  RateLimit: {
    schema: { type: 'string' },
    description:
      'draft-ietf-httpapi-ratelimit-headers-10: every window, what remains `r` and the seconds to its end `t`; during a ban only `"ban";r=0;t=<seconds left>`.',
    example: '"minute";r=59;t=42, "day";r=999;t=81319',
  },
};
const RETRY_AFTER = {
  'Retry-After': { schema: { type: 'integer', minimum: 1 }, required: true, description: 'Seconds until a retry can succeed.', example: 42 },
};

/**
 * Every /v1 response carries the rate-limit fields, whatever its status; a 429 also `Retry-After`.
 * They are required except on a 500, which can come from the limiter itself failing: then there is
 * no count to report.
 */
export function withRateLimitHeaders<Paths extends object>(paths: Paths): Paths {
  for (const operations of Object.values(paths) as Record<string, { responses: Record<string, { headers?: object }> }>[]) {
    for (const [method, operation] of Object.entries(operations)) {
      if (method.startsWith('x-')) continue;
      for (const [status, response] of Object.entries(operation.responses)) {
        const rateLimit = Object.fromEntries(
          Object.entries(RATE_LIMIT_HEADERS).map(([name, header]) => [name, { ...header, required: status !== '500' }]),
        );
        const headers = { ...rateLimit, ...(status === '429' ? RETRY_AFTER : {}), ...response.headers };
        operation.responses[status] = { ...response, headers };
      }
    }
  }
  return paths;
}

/** The fields a deprecated operation's responses carry (RFC 9745, RFC 8594). */
export const DEPRECATION_HEADERS = {
  Deprecation: { schema: { type: 'string' }, description: 'RFC 9745: since when, as `@<unix seconds>`.', example: '@1795219200' },
  Sunset: { schema: { type: 'string' }, description: 'RFC 8594: when the operation stops answering.', example: SUNSET_HTTP_DATE },
  Link: { schema: { type: 'string' }, description: 'The operation to use instead.', example: '</v1/pets>; rel="successor-version"' },
};

/**
 * A deprecated operation marks every response it gives itself, errors included. A 401 or a 405 is
 * always given before it runs, so it is unmarked; a 429 from the limiter or a 400 for a path that
 * cannot be decoded is too, so the fields are optional except on the statuses in `always`, which
 * only the operation gives.
 */
export function deprecatedResponses<Responses extends object>(responses: Responses, always: readonly string[]): Responses {
  const marked: Record<string, { headers?: object }> = {};
  for (const [status, response] of Object.entries(responses) as [string, { headers?: object }][]) {
    if (status === '401' || status === '405') {
      marked[status] = response;
      continue;
    }
    const required = always.includes(status);
    const headers = Object.fromEntries(Object.entries(DEPRECATION_HEADERS).map(([name, header]) => [name, { ...header, required }]));
    marked[status] = { ...response, headers: { ...headers, ...response.headers } };
  }
  return marked as Responses;
}
