/**
 * The closed set of Error `code` values. Adding one is an API change: document it in docs/api.md and
 * the OpenAPI document, and say why.
 */
export const ERROR_CODES = [
  'unauthorized',
  'forbidden',
  'invalid_request',
  'not_found',
  'method_not_allowed',
  'conflict',
  'gone',
  'payload_too_large',
  'unsupported_media_type',
  'rate_limited',
  'api_key_banned',
  'internal',
  'service_unavailable',
  'bad_gateway',
  'gateway_timeout',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/**
 * The gateway's one error type. Everything thrown on a request path becomes one of these via
 * `toApiError` (error-handler.ts) and is rendered as the specification's Error body
 * `{code, message, status}`. `message` is shown to clients, so it never carries internals.
 */
export class ApiError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  /** Extra response headers, such as `Allow` or `WWW-Authenticate`. */
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
    this.headers = headers;
  }

  static invalid(field: string, problem: string): ApiError {
    return new ApiError(400, 'invalid_request', `${field}: ${problem}`);
  }

  /** The Error body, as JSON text. */
  toJson(): string {
    return JSON.stringify({ code: this.code, message: this.message, status: this.status });
  }
}
