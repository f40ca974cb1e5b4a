/**
 * The closed set of Error `code` values, each with the HTTP statuses it comes with and when. This
 * is the one source of the error-code table: the OpenAPI document (and so the API reference at
 * /docs) renders it, and a test keeps docs/api.md's copy identical. Adding a code is an API
 * change: say why in its `when`.
 */
export const ERROR_CODE_TABLE = {
  invalid_request: {
    statuses: [400, 408, 417, 431, 501, 505],
    when: 'bad body, field, query parameter, path parameter, cursor or HTTP framing (408: not received in time; 417: an `Expect` other than `100-continue`; 431: oversized headers; 501: `CONNECT`, or a method HTTP parsers do not know; 505: an HTTP version other than 1.x)',
  },
  unauthorized: { statuses: [401], when: 'missing or unknown API key' },
  forbidden: {
    statuses: [403],
    when: "the pet service refused the call (PERMISSION_DENIED); added so the gRPC table is total. Also a proxied route whose `plans` exclude the key's plan",
  },
  not_found: { statuses: [404], when: 'unknown pet or path' },
  method_not_allowed: { statuses: [405], when: 'known path, other method' },
  conflict: {
    statuses: [409],
    when: 'an `Idempotency-Key` reused with a different body (the pet service\'s ALREADY_EXISTS); added because neither 400 nor 429 says "this key is taken"',
  },
  invalid_transition: {
    statuses: [409],
    when: 'a change of `status` the transition table refuses (`sold` is final; naming the current status is no transition), the message naming both statuses (the pet service\'s FAILED_PRECONDITION); added because `conflict` means a reused `Idempotency-Key`, and a client acts on the two differently',
  },
  gone: { statuses: [410], when: 'the deprecated route after its sunset' },
  precondition_failed: {
    statuses: [412],
    when: "`If-Match` names no current ETag of the pet: it changed since the client read it (the pet service's ABORTED with the current etag); the response's `ETag` is the current one",
  },
  payload_too_large: { statuses: [413], when: "body over 64 KiB, or over a proxied route's `bodyLimitBytes`" },
  unsupported_media_type: {
    statuses: [415],
    when: 'body not `application/json` (on PATCH, not `application/merge-patch+json` or `application/json`, with `Accept-Patch`), a charset other than `utf-8`, or an unsupported Content-Encoding',
  },
  rate_limited: { statuses: [429], when: "over the plan's limit" },
  api_key_banned: { statuses: [429], when: 'key temporarily banned for hammering after 429s' },
  internal: { statuses: [500], when: 'a bug; details are logged, never sent' },
  service_unavailable: {
    statuses: [503],
    when: 'pet service (or its store) unreachable or too slow; or the pet service is over capacity and shed the request (its RESOURCE_EXHAUSTED); or a change or delete found the pet changing under it on every attempt, with no `If-Match` that failed (its ABORTED without a current etag); always with `Retry-After: 1`',
  },
  bad_gateway: {
    statuses: [502],
    when:
      "the upstream of a proxied route refused the connection or failed before its response began; added because 503 already means the pet service, and the fault is the upstream's, not the client's",
  },
  gateway_timeout: {
    statuses: [504],
    when: 'pet service missed its deadline, or the upstream of a proxied route stayed silent past its `timeoutMs`',
  },
} as const satisfies Record<string, { readonly statuses: readonly number[]; readonly when: string }>;

export type ErrorCode = keyof typeof ERROR_CODE_TABLE;

export const ERROR_CODES = Object.keys(ERROR_CODE_TABLE) as readonly ErrorCode[];

/**
 * How many invalid fields a 400 names at most. A request has few fields of its own (a new pet has
 * three, and its `Idempotency-Key`), but a 64 KiB body can hold thousands of unknown members, and
 * the answer to it stays short rather than repeat them all.
 */
export const MAX_NAMED_FIELDS = 10;

/**
 * `Retry-After` of every 503 that does not set its own: whatever made the service unavailable (a
 * shed request, a store that did not answer in time, a pet service out of reach), a client that
 * retries is told when, rather than left to guess (RFC 9110 section 10.2.3), and one second is as
 * long as a shed or timed-out read takes to clear.
 */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 1;

/** {@link ERROR_CODE_TABLE} as a Markdown table, as the OpenAPI document and docs/api.md show it. */
export function errorCodeMarkdown(): string {
  const rows = Object.entries(ERROR_CODE_TABLE).map(([code, { statuses, when }]) => `| \`${code}\` | ${statuses.join(', ')} | ${when} |`);
  return ['| code | HTTP | when |', '|---|---|---|', ...rows].join('\n');
}

/**
 * The gateway's one error type. Everything thrown on a request path becomes one of these via
 * `toApiError` (error-handler.ts) and is rendered as the specification's Error body
 * `{code, message, status}`. `message` is shown to clients, so it never carries internals.
 */
export class ApiError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  /** Extra response headers, such as `Allow` or `WWW-Authenticate`; on a 503, always `Retry-After`. */
  readonly headers: Readonly<Record<string, string>>;

  constructor(status: number, code: ErrorCode, message: string, headers: Readonly<Record<string, string>> = {}) {
    // An ApiError is an expected outcome, not a bug, and its stack is never shown or logged:
    // skipping the capture, the dearest part of making an Error, keeps floods of 429s cheap.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = stackTraceLimit;
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.headers =
      status === 503 && headers['Retry-After'] === undefined ? { ...headers, 'Retry-After': String(UNAVAILABLE_RETRY_AFTER_SECONDS) } : headers;
  }

  static invalid(field: string, problem: string): ApiError {
    return new ApiError(400, 'invalid_request', `${field}: ${problem}`);
  }

  /**
   * A 400 naming every invalid field, each `field: problem`, in the order given, joined by `; `.
   * Past {@link MAX_NAMED_FIELDS} the rest are counted, not named (`; and 3 more invalid fields`).
   */
  static invalidFields(problems: readonly string[]): ApiError {
    const named = problems.slice(0, MAX_NAMED_FIELDS).join('; ');
    const more = problems.length - MAX_NAMED_FIELDS;
    return new ApiError(400, 'invalid_request', more <= 0 ? named : `${named}; and ${more} more invalid field${more === 1 ? '' : 's'}`);
  }

  /** The Error body, as JSON text. */
  toJson(): string {
    return JSON.stringify({ code: this.code, message: this.message, status: this.status });
  }
}
