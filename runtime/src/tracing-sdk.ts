import { type ExportResult, ExportResultCode } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type ReadableSpan,
  type Sampler,
  type SpanExporter,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { EXPORT_FAILURE_REPORT_MS, SHUTDOWN_FLUSH_MS, type Tracing, type TracingOptions } from './tracing-options';
import type { SamplerName, TracingSettings } from './tracing-env';

/**
 * The recording half of {@link createTracing}, loaded only when spans are exported: a tracer
 * provider with the configured sampler and resource, a bounded batch processor, and the OTLP/HTTP
 * protobuf exporter.
 */
export function createRecordingTracing(settings: TracingSettings, options: TracingOptions): Tracing {
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

