import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { type Attributes, type Span, SpanKind, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import { extractTraceContext } from '@petstore/runtime';
import {
  ATTR_CLIENT_ADDRESS,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_NETWORK_PROTOCOL_VERSION,
  ATTR_URL_PATH,
  ATTR_URL_SCHEME,
  ATTR_USER_AGENT_ORIGINAL,
} from '@opentelemetry/semantic-conventions';

/** The gateway's own span attributes, beside OpenTelemetry's semantic conventions. */
export const ATTR_API_KEY_ID = 'petstore.api_key.id';
export const ATTR_PLAN = 'petstore.plan';
/** `allowed`, `limited` or `banned`: the rate limiter's decision on the request. */
export const ATTR_RATE_LIMIT_DECISION = 'petstore.rate_limit.decision';
/** The Error body's `code` of a request the front door refused (401, 429, …). */
export const ATTR_REFUSAL = 'petstore.refusal';
export const ATTR_REQUEST_ID = 'petstore.request_id';
/** True when the client went away before its response was finished. */
export const ATTR_ABORTED = 'petstore.aborted';

/** The known methods keep their name; any other is `_OTHER`, so a span name cannot grow without bound. */
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'CONNECT', 'TRACE']);

function methodOf(request: IncomingMessage): string {
  const method = request.method ?? '';
  return KNOWN_METHODS.has(method) ? method : '_OTHER';
}

/** A field of an incoming request, for {@link extractTraceContext}; Node joins repeated ones but `set-cookie`. */
function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return typeof value === 'string' ? value : undefined;
}

/**
 * A request's server span: a child of the caller's trace when its `traceparent` is valid, else the
 * root of a new trace. Made for every request, recorded or not, so that its ids reach the log line
 * and the services it calls.
 */
export function startRequestSpan(tracer: Tracer, request: IncomingMessage): Span {
  const { headers } = request;
  const parent = extractTraceContext(headers, headerValue);
  const method = methodOf(request);
  const span = tracer.startSpan(method, { kind: SpanKind.SERVER }, parent);
  if (span.isRecording()) {
    const query = request.url?.indexOf('?') ?? -1;
    const attributes: Attributes = {
      [ATTR_HTTP_REQUEST_METHOD]: method,
      [ATTR_URL_PATH]: query === -1 ? request.url : request.url!.slice(0, query),
      [ATTR_URL_SCHEME]: 'http',
      [ATTR_NETWORK_PROTOCOL_VERSION]: request.httpVersion,
      [ATTR_CLIENT_ADDRESS]: request.socket.remoteAddress,
    };
    if (headers['user-agent'] !== undefined) attributes[ATTR_USER_AGENT_ORIGINAL] = headers['user-agent'];
    span.setAttributes(attributes);
  }
  return span;
}

/** What the response was, for {@link endRequestSpan}. */
export interface RequestOutcome {
  readonly route: string;
  readonly status: number;
  readonly requestId: string;
  readonly keyId: string | undefined;
  readonly plan: string | undefined;
  readonly aborted: boolean;
}

/** Names the span after its route template and ends it, with the status (a 5xx is an error). */
export function endRequestSpan(span: Span, request: IncomingMessage, outcome: RequestOutcome): void {
  span.updateName(`${methodOf(request)} ${outcome.route}`);
  const attributes: Attributes = {
    [ATTR_HTTP_ROUTE]: outcome.route,
    [ATTR_HTTP_RESPONSE_STATUS_CODE]: outcome.status,
    [ATTR_REQUEST_ID]: outcome.requestId,
  };
  if (outcome.keyId !== undefined) attributes[ATTR_API_KEY_ID] = outcome.keyId;
  if (outcome.plan !== undefined) attributes[ATTR_PLAN] = outcome.plan;
  if (outcome.aborted) attributes[ATTR_ABORTED] = true;
  if (outcome.status >= 500) {
    attributes[ATTR_ERROR_TYPE] = String(outcome.status);
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.setAttributes(attributes);
  span.end();
}
