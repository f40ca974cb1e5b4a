import {
  type Attributes,
  type Context,
  context as contexts,
  isSpanContextValid,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  type SpanContext,
  type SpanOptions,
  trace,
  TraceFlags,
  type Tracer,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { Logger } from 'pino';
import type { TracingSettings } from './tracing-env';
import type { Tracing, TracingOptions } from './tracing-options';

/** {@link TracingOptions.onExportFailure} as both services log it: one warning per report. */
export function logExportFailures(logger: Logger): NonNullable<TracingOptions['onExportFailure']> {
  return (failures, error) => logger.warn({ failures, err: error }, 'trace export failed; spans are dropped until the collector answers');
}

/**
 * The spans of a service, under OpenTelemetry's SDK, with no global registration and no context
 * manager: the services pass each span's parent explicitly, which costs nothing per request, where
 * an async-context manager and patching auto-instrumentation cost on every request whether or not
 * anything is exported. With no traces URL, nothing is recorded, and the SDK and its exporter are
 * not even loaded: their modules would add to the live heap every garbage collection walks.
 */
export function createTracing(settings: TracingSettings, options: TracingOptions = {}): Tracing {
  if (settings.tracesUrl === undefined && options.exporter === undefined) return NON_RECORDING;
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded here, not at start-up: see above
  const { createRecordingTracing } = require('./tracing-sdk') as typeof import('./tracing-sdk');
  return createRecordingTracing(settings, options);
}

/**
 * A W3C trace or span id of `bytes` random bytes, in hex: unique, not secret, as OpenTelemetry's
 * own RandomIdGenerator makes them (which lives in the SDK this module does not load), never all
 * zeros.
 */
function randomId(bytes: 8 | 16): string {
  let any = 0;
  for (let offset = 0; offset < bytes; offset += 4) {
    const word = (Math.random() * 2 ** 32) >>> 0;
    any |= word;
    ID_BUFFER.writeUInt32BE(word, offset);
  }
  if (any === 0) ID_BUFFER[bytes - 1] = 1;
  return ID_BUFFER.toString('hex', 0, bytes);
}

const ID_BUFFER = Buffer.allocUnsafe(16);

/**
 * Records nothing, but gives every span its own ids, in its parent's trace (or a new one), and
 * keeps the parent's sampled flag and trace state: a service that exports nothing passes on the
 * caller's sampling decision untouched, where the SDK's non-recording spans would clear the flag and
 * make every service after it drop the trace.
 */
class PropagatingTracer implements Tracer {
  startSpan(_name: string, _options?: SpanOptions, context: Context = contexts.active()): Span {
    const parent = trace.getSpanContext(context);
    if (parent === undefined || !isSpanContextValid(parent)) {
      return trace.wrapSpanContext({ traceId: randomId(16), spanId: randomId(8), traceFlags: TraceFlags.NONE });
    }
    const span: SpanContext = { traceId: parent.traceId, spanId: randomId(8), traceFlags: parent.traceFlags };
    if (parent.traceState !== undefined) span.traceState = parent.traceState;
    return trace.wrapSpanContext(span);
  }

  startActiveSpan<F extends (span: Span) => unknown>(name: string, ...rest: [F] | [SpanOptions, F] | [SpanOptions, Context, F]): ReturnType<F> {
    const fn = rest[rest.length - 1] as F;
    const options = rest.length > 1 ? (rest[0] as SpanOptions) : undefined;
    const parent = rest.length > 2 ? (rest[1] as Context) : contexts.active();
    const span = this.startSpan(name, options, parent);
    return contexts.with(trace.setSpan(parent, span), () => fn(span) as ReturnType<F>);
  }
}

/** A tracer that records nothing but gives every span its own ids: the default of every factory. */
export const NON_RECORDING_TRACER: Tracer = new PropagatingTracer();

const NON_RECORDING: Tracing = { tracer: NON_RECORDING_TRACER, shutdown: () => Promise.resolve() };

/**
 * A client span, child of `parent`, for a call made on its behalf (the pet service, an upstream, a
 * store operation); undefined when `parent` is not recorded, the callee then being told of `parent`
 * itself. `attributes` should be made once where they can be: they are read only for a recorded span.
 */
export function startChildSpan(tracer: Tracer, parent: Span, name: string, attributes: Attributes): Span | undefined {
  if (!parent.isRecording()) return undefined;
  return tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }, trace.setSpan(ROOT_CONTEXT, parent));
}

/** W3C Trace Context (`traceparent`, `tracestate`): the one propagation format both services speak. */
export const TRACE_CONTEXT = new W3CTraceContextPropagator();

/** The carrier of {@link traceHeaders}: the two W3C fields, the second only when there is state. */
export interface TraceHeaders {
  traceparent?: string;
  tracestate?: string;
}

/**
 * The W3C fields that make `span` the parent of what a callee does; none for an invalid span.
 * Written as {@link TRACE_CONTEXT}'s `inject` writes them (a test holds the two equal), without the
 * context it needs built for every call.
 */
export function traceHeaders(span: Span): TraceHeaders {
  const context = span.spanContext();
  if (!isSpanContextValid(context)) return {};
  const headers: TraceHeaders = { traceparent: `00-${context.traceId}-${context.spanId}-0${(context.traceFlags & TraceFlags.SAMPLED).toString(16)}` };
  const state = context.traceState?.serialize();
  if (state !== undefined && state !== '') headers.tracestate = state;
  return headers;
}

/**
 * The caller's trace context from its W3C fields (`get` reads one from `carrier`); the root context
 * if none is valid. `get` should be made once: a call without `traceparent` (an untraced caller)
 * then allocates nothing.
 */
export function extractTraceContext<Carrier>(carrier: Carrier, get: (carrier: Carrier, name: string) => string | undefined): Context {
  // Without traceparent, the propagator returns the context it is given.
  if (get(carrier, TRACEPARENT) === undefined) return ROOT_CONTEXT;
  return TRACE_CONTEXT.extract(ROOT_CONTEXT, carrier, { get, keys: () => [] });
}

const TRACEPARENT = 'traceparent';
