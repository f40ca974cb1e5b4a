import type { IncomingMessage } from 'node:http';
import type { Span } from '@opentelemetry/api';
import type { ApiKey } from '../keys/api-keys';

/**
 * What the front door knows of a request, made once when it takes the request and read by
 * whatever answers it: the pets routes, express's routes and proxies, and the request log.
 */
export interface RequestContext {
  /** Echoed as `X-Request-Id` and sent to the pet service, so one id follows the call. */
  readonly requestId: string;
  /** `process.hrtime.bigint()` when the front door took the request. */
  readonly startedAt: bigint;
  /**
   * The request's server span, recorded or not: its trace and span ids go to the log line, and it is
   * the parent of the calls the request makes (`traceparent` to the pet service and upstreams).
   */
  readonly span: Span;
  /** The valid API key the request carried, if it had one; never its secret. */
  key: ApiKey | undefined;
  /**
   * The route template or label logs and metrics report (`/v1/pets/:petId`, a proxied prefix);
   * undefined: express's matched route, or `unmatched`.
   */
  route: string | undefined;
  /**
   * Aborted when the client goes away before its answer is finished, so the call made for it
   * (to the pet service) is cancelled; set by whatever makes such a call.
   */
  cancel: AbortController | undefined;
}

const CONTEXT = Symbol('request context');

type WithContext = IncomingMessage & { [CONTEXT]?: RequestContext };

/** Gives `request` its context; the front door does, before anything else sees the request. */
export function attachContext(request: IncomingMessage, context: RequestContext): void {
  (request as WithContext)[CONTEXT] = context;
}

/** The context the front door gave `request`; every request that reaches a route has one. */
export function contextOf(request: IncomingMessage): RequestContext {
  const context = (request as WithContext)[CONTEXT];
  if (context === undefined) throw new Error('request did not pass through the front door');
  return context;
}
