/**
 * What `createTracing` (tracing.ts) and its recording half (tracing-sdk.ts, loaded only when spans
 * are exported) share, apart from both so that neither imports the other.
 */
import type { Tracer } from '@opentelemetry/api';
import type { SpanExporter } from '@opentelemetry/sdk-trace';

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
