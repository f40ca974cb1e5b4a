import {
  type Context,
  context as contexts,
  isSpanContextValid,
  ROOT_CONTEXT,
  type Span,
  type SpanOptions,
  trace,
  TraceFlags,
  type Tracer,
} from '@opentelemetry/api';
import { type ExportResult, ExportResultCode, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  RandomIdGenerator,
  type ReadableSpan,
  type Sampler,
  type SpanExporter,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { SamplerName, TracingSettings } from './tracing-env';

/** A service's tracer, and how to flush what it has recorded. */
export interface Tracing {
  /**
   * Starts the service's spans. Spans it does not record (export off, or not sampled) still get
   * their own ids, so trace context propagates and log lines carry ids whatever the settings.
   */
  readonly tracer: Tracer;
  /**
   * Exports what is queued, for at most {@link SHUTDOWN_FLUSH_MS}, and stops; spans ended later are
   * dropped. Never rejects: a collector that is down must not fail a clean shutdown.
   */
  shutdown(): Promise<void>;
}

export interface TracingOptions {
  /**
   * Told of failed exports, at most once per {@link EXPORT_FAILURE_REPORT_MS}, with how many failed
   * since the last report: a collector that is down must not flood the log.
   */
  readonly onExportFailure?: (failures: number, error: Error | undefined) => void;
  /** Monotonic milliseconds, for the reports' interval. */
  readonly now?: () => number;
  /** Where spans go instead of OTLP (tests). */
  readonly exporter?: SpanExporter;
}

/** Shortest time between two reports of failed exports. */
export const EXPORT_FAILURE_REPORT_MS = 60_000;

/** Longest a shutdown waits for queued spans to be exported: well within SHUTDOWN_TIMEOUT_MS. */
export const SHUTDOWN_FLUSH_MS = 2000;

/**
 * The spans of a service, under OpenTelemetry's SDK, with no global registration and no context
 * manager: the services pass each span's parent explicitly, which costs nothing per request, where
 * an async-context manager and patching auto-instrumentation cost on every request whether or not
 * anything is exported. With no traces URL, nothing is recorded.
 */
export function createTracing(settings: TracingSettings, options: TracingOptions = {}): Tracing {
  if (settings.tracesUrl === undefined && options.exporter === undefined) return NON_RECORDING;
  const exporter = reportingFailures(options.exporter ?? new OTLPTraceExporter({ url: settings.tracesUrl }), options);
  const processor = new BatchSpanProcessor({ exporter, ...settings.batching });
  const provider = new TracerProvider({
    resource: defaultResource().merge(resourceFromAttributes({ ...settings.resourceAttributes, [ATTR_SERVICE_NAME]: settings.serviceName })),
    sampler: samplerOf(settings.sampler, settings.samplerRatio),
    spanProcessors: [processor],
  });
  const shutdown = (): Promise<void> => {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, SHUTDOWN_FLUSH_MS)));
    return Promise.race([provider.shutdown().catch(() => undefined), bound]).finally(() => clearTimeout(timer));
  };
  return { tracer: provider.getTracer(settings.serviceName), shutdown };
}

const ids = new RandomIdGenerator();

/**
 * Records nothing, but gives every span its own ids, in its parent's trace (or a new one), and
 * keeps the parent's sampled flag and trace state: a service that exports nothing passes on the
 * caller's sampling decision untouched, where the SDK's non-recording spans would clear the flag and
 * make every service after it drop the trace.
 */
class PropagatingTracer implements Tracer {
  startSpan(_name: string, _options?: SpanOptions, context: Context = contexts.active()): Span {
    const parent = trace.getSpanContext(context);
    const valid = parent !== undefined && isSpanContextValid(parent);
    return trace.wrapSpanContext({
      traceId: valid ? parent.traceId : ids.generateTraceId(),
      spanId: ids.generateSpanId(),
      traceFlags: valid ? parent.traceFlags : TraceFlags.NONE,
      ...(valid && parent.traceState !== undefined ? { traceState: parent.traceState } : {}),
    });
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

function samplerOf(name: SamplerName, ratio: number): Sampler {
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
  }
}

/** The exporter, telling `onExportFailure` of failures at most once per interval. */
function reportingFailures(inner: SpanExporter, { onExportFailure, now = () => performance.now() }: TracingOptions): SpanExporter {
  if (onExportFailure === undefined) return inner;
  let failures = 0;
  let reportedAt = -Infinity;
  return {
    export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
      inner.export(spans, (result) => {
        if (result.code !== ExportResultCode.SUCCESS) {
          failures += 1;
          if (now() - reportedAt >= EXPORT_FAILURE_REPORT_MS) {
            onExportFailure(failures, result.error);
            failures = 0;
            reportedAt = now();
          }
        }
        done(result);
      });
    },
    shutdown: () => inner.shutdown(),
    ...(inner.forceFlush === undefined ? {} : { forceFlush: () => inner.forceFlush!() }),
  };
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

/** The caller's trace context from its W3C fields (values read by `get`); the root context if none is valid. */
export function extractTraceContext(get: (name: string) => string | undefined): Context {
  return TRACE_CONTEXT.extract(ROOT_CONTEXT, undefined, { get: (_carrier, name) => get(name), keys: () => [] });
}
