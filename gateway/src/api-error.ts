/**
 * The closed set of Error `code` values. Adding one is an API change: document it in README and
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
  'gateway_timeout',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/**
 * The gateway's one error type. Everything thrown on a request path becomes one of these via
 * {@link ApiError.from} and is rendered as the specification's Error body `{code, message, status}`.
 * `message` is shown to clients, so it never carries internals.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    /** Extra response headers, such as `Allow` or `WWW-Authenticate`. */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }

  static invalid(field: string, problem: string): ApiError {
    return new ApiError(400, 'invalid_request', `${field}: ${problem}`);
  }

  /** The Error body, as JSON text. */
  toJson(): string {
    return JSON.stringify({ code: this.code, message: this.message, status: this.status });
  }
}
