/**
 * The wrapper every PetService RPC runs in: it times and counts each call, gives it a server span
 * (a child of the caller's `traceparent`), logs it at a level that suits its outcome, refuses an
 * undecodable request, maps anything thrown to a gRPC status and answers nothing to a call that
 * was cancelled.
 */
import { type Metadata, status as Status, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import { type Span, SpanKind, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import { ATTR_RPC_METHOD, ATTR_RPC_STATUS_CODE, ATTR_RPC_SYSTEM_NAME } from '@opentelemetry/semantic-conventions';
import { PET_SERVICE_NAME, REQUEST_ID_METADATA, REQUEST_ID_PATTERN } from '@petstore/proto';
import { extractTraceContext } from '@petstore/runtime';
import type { Logger } from 'pino';
import type { PetServiceMetrics } from '../observability/metrics';
import { PetServiceError } from '../pets/pet-service-error';
import { Undecodable } from './undecodable-request';
import { callerFields, recordCaller } from './caller-certificate';

export interface UnaryCallDependencies {
  readonly logger: Logger;
  readonly metrics: PetServiceMetrics;
  /**
   * Aborted when a forced shutdown cancels the calls still running: their store operations then
   * fail as the store closes, possibly before grpc-js has marked each call cancelled.
   */
  readonly forcedShutdown: AbortSignal;
  /**
   * A call that succeeds in less than this many ms is logged at debug, not info: the line is a
   * large share of a fast call's CPU, and the gateway already logs every request with the same
   * request id. 0 logs every call at info.
   */
  readonly slowCallMs: number;
  /** Monotonic time in ns (`process.hrtime.bigint`); calls are timed with it. */
  readonly clock: () => bigint;
  /** Starts each call's server span, recorded or not: its ids go to the call's log line. */
  readonly tracer: Tracer;
}

/** A method's handler: `span` is the call's server span, the parent of the store operations' spans. */
export type UnaryHandler<Req, Res> = (request: Req, call: ServerUnaryCall<Req, Res>, span: Span) => Promise<Res>;

/** Turns a method's handler into a grpc-js unary handler. */
export type UnaryCall = <Req, Res>(
  method: string,
  handle: UnaryHandler<Req, Res>,
) => (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => void;

/**
 * The codes that make a server span an error, as OpenTelemetry's gRPC conventions list them: the
 * others (NOT_FOUND, INVALID_ARGUMENT, …) are the caller's doing.
 */
const SERVER_ERRORS = new Set([Status.UNKNOWN, Status.DEADLINE_EXCEEDED, Status.UNIMPLEMENTED, Status.INTERNAL, Status.UNAVAILABLE, Status.DATA_LOSS]);

/** Makes the wrapper; `method` is the RPC's name as metrics and logs give it (`ListPets`). */
export function createUnaryCall({ logger, metrics, forcedShutdown, slowCallMs, clock, tracer }: UnaryCallDependencies): UnaryCall {
  return <Req, Res>(method: string, handle: UnaryHandler<Req, Res>) => {
    const rpcMethod = `${PET_SERVICE_NAME}/${method}`;
    const spanOptions = { kind: SpanKind.SERVER, attributes: { [ATTR_RPC_SYSTEM_NAME]: 'grpc', [ATTR_RPC_METHOD]: rpcMethod } };
    // One label object per status code, made once rather than twice per call.
    const labels = new Map<Status, { method: string; code: string }>();
    const labelsOf = (code: Status) => {
      let found = labels.get(code);
      if (found === undefined) labels.set(code, (found = { method, code: Status[code]! }));
      return found;
    };
    return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>): void => {
      const start = clock();
      const { metadata } = call;
      const span = tracer.startSpan(rpcMethod, spanOptions, extractTraceContext(metadata, stringValue));
      const finish = (code: Status, error?: unknown): void => {
        const ms = Number(clock() - start) / 1e6;
        const callLabels = labelsOf(code);
        metrics.grpcCalls.inc(callLabels);
        metrics.grpcCallSeconds.observe(callLabels, ms / 1000);
        if (span.isRecording()) {
          span.setAttribute(ATTR_RPC_STATUS_CODE, callLabels.code);
          recordCaller(span, call);
          if (SERVER_ERRORS.has(code)) span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        }
        // The line is built only when some level will write it.
        if (code === Status.INTERNAL || code === Status.UNKNOWN) {
          logger.error({ ...callLine(method, callLabels.code, ms, metadata, span), ...callerFields(call), err: error }, 'grpc call failed');
        } else if (code !== Status.OK || ms >= slowCallMs) {
          // A failed call says why, in the service's own words: a store timeout, a shed call and a
          // cancel look alike by code. (An undefined field is left out of the line.)
          const reason = error instanceof Error ? error.message : undefined;
          logger.info({ ...callLine(method, callLabels.code, ms, metadata, span), ...callerFields(call), reason }, 'grpc call');
        } else if (logger.isLevelEnabled('debug')) {
          logger.debug({ ...callLine(method, callLabels.code, ms, metadata, span), ...callerFields(call) }, 'grpc call');
        }
      };
      const request: Req = call.request;
      const handled =
        (request as unknown) instanceof Undecodable
          ? Promise.reject(PetServiceError.invalidArgument('request', (request as Undecodable).problem))
          : handle(request, call, span);
      handled.then(
        (response) => {
          if (call.cancelled || forcedShutdown.aborted) return finish(Status.CANCELLED);
          finish(Status.OK);
          callback(null, response);
        },
        (error: unknown) => {
          // Cancelled by its client or by a forced shutdown, which may close the store under it:
          // what the store operation then met is no fault of the service.
          if (call.cancelled || forcedShutdown.aborted) return finish(Status.CANCELLED);
          const serviceError = PetServiceError.toServiceError(error);
          finish(serviceError.code!, error);
          callback(serviceError);
        },
      );
    };
  };
}

/** A call's log line; its trace and span ids lead to its trace, as the gateway's request line's do. */
function callLine(method: string, code: string, duration: number, metadata: Metadata, span: Span) {
  const { traceId, spanId } = span.spanContext();
  return { method, code, duration, requestId: requestIdOf(metadata), traceId, spanId };
}

/** The caller's request id when it is sane by the gateway's rule; anything else is not logged. */
function requestIdOf(metadata: Metadata): string | undefined {
  const value = stringValue(metadata, REQUEST_ID_METADATA);
  return value !== undefined && REQUEST_ID_PATTERN.test(value) ? value : undefined;
}

function stringValue(metadata: Metadata, name: string): string | undefined {
  const value = metadata.get(name)[0];
  return typeof value === 'string' ? value : undefined;
}
