import {
  DEFAULT_PAGE_SIZE,
  IDEMPOTENCY_KEY_PATTERN,
  INT64_MAX,
  MAX_PAGE_SIZE,
  NAME_MAX_CHARACTERS,
  NAME_MIN_CHARACTERS,
  NAME_PATTERN,
  PAGE_TOKEN_PATTERN,
} from '@petstore/proto';
import { ERROR_CODE_TABLE, ERROR_CODES, type ErrorCode, errorCodeMarkdown } from './api-error';

/**
 * The OpenAPI 3.1 document for the public contract, served at `GET /v1/openapi.json`.
 * The gateway's request validators are compiled from these schemas, and the integration tests
 * validate every response against this document, so the document and the behaviour cannot drift.
 */
export const PET_STATUSES = ['available', 'pending', 'sold'] as const;
export const SUNSET_HTTP_DATE = 'Thu, 05 Dec 2030 00:00:00 GMT';

const int64 = (description: string) => ({ type: 'integer', format: 'int64', minimum: 1, maximum: INT64_MAX, description });

const EXAMPLE_PETS = [
  { id: 1, name: 'Rex', categoryId: 3, status: 'available' },
  { id: 2, name: 'Tom', categoryId: 12, status: 'sold' },
];

/** The summary of the guide the document's introduction folds away (see `apiDescription`). */
export const GUIDE_SUMMARY = 'Guide: authentication, rate limits, pagination, deprecation and errors';

/** A representative message for each code, shown in the document's examples. */
const EXAMPLE_MESSAGES: Readonly<Record<ErrorCode, string>> = {
  invalid_request: 'categoryId: must be a positive int64',
  unauthorized: 'missing bearer API key',
  forbidden: 'permission denied',
  not_found: 'pet 42 not found',
  method_not_allowed: 'method not allowed; allowed: GET, HEAD, POST',
  conflict: 'Idempotency-Key: already used with a different request',
  gone: `this operation was removed at ${SUNSET_HTTP_DATE}; use GET /v1/pets?status=`,
  payload_too_large: 'body: larger than 64 KiB',
  unsupported_media_type: 'body: Content-Type must be application/json',
  rate_limited: 'rate limit exceeded: 60 requests per minute',
  api_key_banned: 'API key temporarily banned for repeated requests while rate limited',
  internal: 'internal error',
  service_unavailable: 'pet service unavailable',
  bad_gateway: 'the upstream service failed to answer',
  gateway_timeout: 'pet service did not answer in time',
};
const exampleError = (code: ErrorCode) => ({ code, message: EXAMPLE_MESSAGES[code], status: ERROR_CODE_TABLE[code].statuses[0] });

export const schemas = {
  PetStatus: { type: 'string', enum: [...PET_STATUSES], description: 'Availability of a pet.' },
  NewPet: {
    type: 'object',
    required: ['name', 'categoryId'],
    additionalProperties: false,
    properties: {
      name: {
        type: 'string',
        minLength: NAME_MIN_CHARACTERS,
        maxLength: NAME_MAX_CHARACTERS,
        pattern: NAME_PATTERN.source,
        description: `${NAME_MIN_CHARACTERS} to ${NAME_MAX_CHARACTERS} characters (code points), none of them a control character (U+0000 to U+001F, U+007F to U+009F).`,
      },
      categoryId: int64(
        'Positive int64, emitted as a plain JSON integer without rounding. Accepted as any JSON number whose value is an integer in range, exactly: `100`, `100.0` and `1E2` are all 100.',
      ),
      status: { $ref: '#/components/schemas/PetStatus', default: 'available' },
    },
    examples: [{ name: 'Rex', categoryId: 3 }],
  },
  Pet: {
    type: 'object',
    required: ['id', 'name', 'categoryId', 'status'],
    additionalProperties: false,
    properties: {
      id: int64('Assigned by the service: unique and increasing.'),
      name: { type: 'string', minLength: NAME_MIN_CHARACTERS, maxLength: NAME_MAX_CHARACTERS },
      categoryId: int64('Positive int64.'),
      status: { $ref: '#/components/schemas/PetStatus' },
    },
    examples: [EXAMPLE_PETS[0]],
  },
  Pets: { type: 'array', items: { $ref: '#/components/schemas/Pet' }, examples: [EXAMPLE_PETS] },
  Error: {
    type: 'object',
    description: 'The body of every error response, whatever its status. The codes are listed under Errors at the top.',
    required: ['code', 'message', 'status'],
    additionalProperties: false,
    properties: {
      code: { type: 'string', enum: [...ERROR_CODES], description: 'Machine-readable; a closed set.' },
      message: { type: 'string', description: 'Human-readable; names the offending field for 400s.' },
      status: { type: 'integer', minimum: 400, maximum: 599, description: 'The HTTP status code.' },
    },
    examples: [exampleError('invalid_request')],
  },
  IdempotencyKey: {
    type: 'string',
    minLength: 1,
    maxLength: 255,
    pattern: IDEMPOTENCY_KEY_PATTERN.source,
    description: '1 to 255 visible ASCII characters, chosen by the client (a UUID is typical).',
  },
  ListQuery: {
    type: 'object',
    additionalProperties: true,
    properties: {
      limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE },
      status: { $ref: '#/components/schemas/PetStatus' },
      cursor: { type: 'string', pattern: PAGE_TOKEN_PATTERN.source },
    },
  },
} as const;

/** A response of Error bodies with `codes`; `messages` gives an operation's own example message for a code. */
const error = (description: string, codes: readonly ErrorCode[], messages: Partial<Record<ErrorCode, string>> = {}) => ({
  description: `${description} Error codes: ${codes.join(', ')}.`,
  content: {
    'application/json': {
      schema: { $ref: '#/components/schemas/Error' },
      examples: Object.fromEntries(codes.map((code) => [code, { value: { ...exampleError(code), message: messages[code] ?? EXAMPLE_MESSAGES[code] } }])),
    },
  },
});

const commonErrors = {
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
  '429': error('Over the rate limit, the key is temporarily banned, or the pet service is over capacity.', [
    'rate_limited',
    'api_key_banned',
  ]),
  '500': error('Unexpected failure.', ['internal']),
  '503': error('The pet service is unavailable.', ['service_unavailable']),
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
function withRateLimitHeaders<Paths extends object>(paths: Paths): Paths {
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

const DEPRECATION_HEADERS = {
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
function deprecatedResponses<Responses extends object>(responses: Responses, always: readonly string[]): Responses {
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

const jsonBody = (ref: string) => ({ content: { 'application/json': { schema: { $ref: `#/components/schemas/${ref}` } } } });
const queryParameter = (name: keyof typeof schemas.ListQuery.properties, description: string) => ({
  name,
  in: 'query',
  required: false,
  description,
  schema: schemas.ListQuery.properties[name],
});

export const openApiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'Pet store',
    version: '1.0.0',
    description: apiDescription(),
  },
  tags: [{ name: 'pets', description: 'The pets in the store.' }],
  servers: [{ url: '/v1' }],
  security: [{ bearerAuth: [] }],
  paths: withRateLimitHeaders({
    '/pets': {
      get: {
        operationId: 'listPets',
        tags: ['pets'],
        summary: 'List pets in ascending id order.',
        parameters: [
          queryParameter('limit', 'Page size, 1 to 100.'),
          queryParameter('status', 'Only pets with this status.'),
          queryParameter('cursor', 'Opaque; taken from the `Link: rel="next"` header of the previous page.'),
        ],
        responses: {
          '200': {
            description: 'A page of pets. When more exist, `Link` carries the next page with rel="next".',
            headers: {
              Link: {
                schema: { type: 'string' },
                description: 'The next page (RFC 8288), with the same `limit` and `status`; absent on the last page.',
                example: '</v1/pets?limit=2&status=available&cursor=djEuYXZhaWxhYmxlLjKapSb59djMg2pz9O0>; rel="next"',
              },
            },
            ...jsonBody('Pets'),
          },
          '400': error('Bad `limit`, `status` or `cursor`, or two Authorization fields.', ['invalid_request'], {
            invalid_request: 'limit: must be <= 100',
          }),
          ...commonErrors,
        },
      },
      post: {
        operationId: 'createPet',
        tags: ['pets'],
        summary: 'Add a pet.',
        parameters: [
          {
            name: 'Idempotency-Key',
            in: 'header',
            required: false,
            description:
              'Makes the create safe to retry: for 24 hours, a retry with the same key and body returns the first ' +
              "result (same id, 201) and creates nothing. Keys are scoped to the API key.",
            schema: { $ref: '#/components/schemas/IdempotencyKey' },
          },
        ],
        requestBody: { required: true, ...jsonBody('NewPet') },
        responses: {
          '201': {
            description: 'Created, or the first result again for a retried Idempotency-Key.',
            headers: {
              Location: { schema: { type: 'string' }, required: true, description: '/v1/pets/{id}' },
              'Idempotent-Replayed': {
                schema: { type: 'string', enum: ['true'] },
                description: 'Present when the response replays an earlier create with the same Idempotency-Key.',
              },
            },
            ...jsonBody('Pet'),
          },
          '400': error(
            'Body missing, not valid UTF-8, escaping an unpaired surrogate, nested more than 64 deep, not JSON or not a JSON object; a field missing or invalid; a bad Idempotency-Key; or two Authorization fields.',
            ['invalid_request'],
          ),
          '409': error('The Idempotency-Key was already used with a different body.', ['conflict']),
          '413': error('Body over 64 KiB.', ['payload_too_large']),
          '415': error('Body is not application/json, or its charset is not utf-8.', ['unsupported_media_type']),
          ...commonErrors,
        },
      },
    },
    '/pets/{petId}': {
      get: {
        operationId: 'getPet',
        tags: ['pets'],
        summary: 'Fetch one pet.',
        deprecated: true,
        description: `Deprecated; removed at ${SUNSET_HTTP_DATE}. Use listPets with a status filter.`,
        parameters: [{ name: 'petId', in: 'path', required: true, schema: int64('Positive int64 in decimal.') }],
        responses: deprecatedResponses(
          {
            '200': { description: 'The pet.', ...jsonBody('Pet') },
            '400': error('`petId` is not a positive int64, or is not validly percent-encoded, or two Authorization fields.', ['invalid_request'], {
              invalid_request: 'petId: must be a positive int64',
            }),
            '404': error('No pet with this id.', ['not_found']),
            '410': error('The operation has reached its sunset.', ['gone']),
            ...commonErrors,
          },
          ['200', '404', '410'],
        ),
      },
    },
  }),
  components: {
    schemas,
    securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key.' } },
  },
};

/** Where a proxied path item says which configured prefix it stands for. */
export const PROXIED_PREFIX = 'x-proxied-prefix';

/**
 * What the document says of a proxied route: the fields of `upstream/routes-file.ts`'s ProxyRoute
 * that it shows, declared here so that this layer does not import the one above it.
 */
export interface DocumentedRoute {
  readonly prefix: string;
  readonly methods: readonly string[];
  readonly timeoutMs: number;
  readonly bodyLimitBytes: number | undefined;
  readonly plans: readonly string[] | undefined;
}

/**
 * The OpenAPI document with each configured route as generic operations: its prefix, and any path
 * below it as `{rest}`, for each allowed method (HEAD with GET), under the same bearer security.
 * The documented statuses are the gateway's own answers, with the Error body; everything else is
 * the upstream's, passed through unchanged (`default`).
 */
export function openApiDocumentFor(routes: readonly DocumentedRoute[]): typeof openApiDocument {
  if (routes.length === 0) return openApiDocument;
  const paths: Record<string, object> = {};
  for (const route of routes) {
    const path = route.prefix.slice('/v1'.length);
    paths[path] = proxiedPathItem(route, false);
    paths[`${path}/{rest}`] = proxiedPathItem(route, true);
  }
  return { ...openApiDocument, paths: { ...openApiDocument.paths, ...withRateLimitHeaders(paths) } };
}

function proxiedPathItem(route: DocumentedRoute, below: boolean): object {
  const name = route.prefix.slice('/v1/'.length).replace(/[^A-Za-z0-9]+(.)?/g, (_match, next: string | undefined) => (next ?? '').toUpperCase());
  const item: Record<string, unknown> = { [PROXIED_PREFIX]: route.prefix };
  for (const method of route.methods) {
    if (method === 'HEAD' && route.methods.includes('GET')) continue;
    item[method.toLowerCase()] = {
      operationId: `${name}${below ? 'Below' : ''}${method[0]}${method.slice(1).toLowerCase()}`,
      summary: `Proxied to an HTTP service behind the gateway${below ? ' (any path below the prefix)' : ''}.`,
      description:
        'The request goes to the upstream without `Authorization`, with `X-Api-Key-Id`, `X-Plan`, `X-Request-Id` and ' +
        '`X-Forwarded-*`; its response, errors included, comes back unchanged. The statuses listed are the ' +
        "gateway's own answers; the upstream's other responses fall under `default`." +
        (route.methods.includes('GET') ? ' HEAD is answered wherever GET is.' : ''),
      parameters: below
        ? [{ name: 'rest', in: 'path', required: true, description: 'The rest of the path; may contain `/`.', schema: { type: 'string' } }]
        : [],
      ...(['POST', 'PUT', 'PATCH'].includes(method) ? { requestBody: { required: false, content: { '*/*': { schema: {} } } } } : {}),
      responses: proxiedResponses(route),
    };
  }
  return item;
}

function proxiedResponses(route: DocumentedRoute): Record<string, object> {
  return {
    default: { description: "The upstream's response, passed through unchanged." },
    '400': error('Transfer-Encoding other than chunked, a body of unknown length on DELETE or OPTIONS, or two Authorization fields.', ['invalid_request']),
    '401': commonErrors['401'],
    ...(route.plans === undefined ? {} : { '403': error(`The key's plan may not use this route; allowed: ${route.plans.join(', ')}.`, ['forbidden']) }),
    '405': commonErrors['405'],
    ...(route.bodyLimitBytes === undefined ? {} : { '413': error(`Body over ${route.bodyLimitBytes} bytes.`, ['payload_too_large']) }),
    '429': error('Over the rate limit, or the key is temporarily banned.', ['rate_limited', 'api_key_banned']),
    '500': commonErrors['500'],
    '502': error('The upstream refused the connection, or failed before its response began.', ['bad_gateway']),
    '504': error(`The upstream was silent for ${route.timeoutMs} ms.`, ['gateway_timeout']),
  };
}

function headerList(headers: Record<string, { description: string; example?: unknown }>): string {
  return Object.entries(headers)
    .map(([name, { description, example }]) => `- \`${name}\`${example === undefined ? '' : ` (\`${String(example)}\`)`}: ${description}`)
    .join('\n');
}

/**
 * The document's introduction, the first thing the API reference at /docs shows: two lines, then
 * what applies to every operation, from the same declarations the operations use, folded in a
 * `<details>` element, so that Authorize and the operations come first on the page.
 */
function apiDescription(): string {
  return [
    'A store of animals, behind an API gateway. This reference is rendered from the OpenAPI document served at ' +
      '[`GET /v1/openapi.json`](/v1/openapi.json), which needs no key. Set your API key with **Authorize**, ' +
      'then **Try it out** on any operation.',
    `<details><summary>${GUIDE_SUMMARY}</summary>`,
    '## Authentication',
    'Every operation needs `Authorization: Bearer <API key>`; in this page, set it with **Authorize** before ' +
      '**Try it out**. A missing, malformed or unknown key is 401 `unauthorized` with a `WWW-Authenticate` challenge.',
    '## Rate limits',
    "Each API key's plan allows so many requests per minute and per day, in fixed windows aligned to UTC; requests " +
      'without a valid key, this page included, are limited per client IP. Every `/v1` response carries:',
    headerList(RATE_LIMIT_HEADERS),
    'Over a limit the answer is 429 `rate_limited` with `Retry-After`; a key that keeps sending while limited is ' +
      'banned for a while: 429 `api_key_banned`.',
    '## Pagination',
    '`GET /pets` answers a bare JSON array of at most `limit` pets (default ' +
      `${DEFAULT_PAGE_SIZE}, at most ${MAX_PAGE_SIZE}), in ascending id order. When more exist, the response carries ` +
      'a `Link` header with `rel="next"`: follow it, unchanged, for the next page. Its `cursor` is opaque.',
    '## Deprecation',
    `\`GET /pets/{petId}\` is deprecated and answers 410 \`gone\` from ${SUNSET_HTTP_DATE}. Until then its responses carry:`,
    headerList(DEPRECATION_HEADERS),
    '## Errors',
    'Every error is the `Error` body `{code, message, status}` with `Content-Type: application/json`: never HTML, ' +
      'never a stack trace. A 400\'s message starts with the offending field. `code` is one of this closed set:',
    errorCodeMarkdown(),
    'Numbers: `id` and `categoryId` are int64 and never rounded on the wire. Try it out shows responses through ' +
      "the browser's JSON parser, which rounds integers above 2^53; the body the gateway sent is exact.",
    '</details>',
  ].join('\n\n');
}
