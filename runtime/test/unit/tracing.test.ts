import { once } from 'node:events';
import { createServer } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { ROOT_CONTEXT, type SpanContext, trace, TraceFlags } from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';
import { expect } from 'chai';
import { cleanEnv } from 'envalid';
import {
  createTracing,
  EXPORT_FAILURE_REPORT_MS,
  extractTraceContext,
  NON_RECORDING_TRACER,
  SHUTDOWN_FLUSH_MS,
  throwOnError,
  TRACE_CONTEXT,
  traceHeaders,
  TRACING_ENV,
  type TracingSettings,
  tracingSettings,
} from '../../index';
import { waitFor } from '../../../system-test/support/wait-for';

const settingsOf = (env: Record<string, string>): TracingSettings =>
  tracingSettings(cleanEnv(env, TRACING_ENV, { reporter: throwOnError }), 'svc');

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const PARENT_ID = 'b7ad6b7169203331';

function remote(flags: TraceFlags, tracestate?: string): ReturnType<typeof extractTraceContext> {
  return extractTraceContext({}, (_carrier, name) =>
    name === 'traceparent' ? `00-${TRACE_ID}-${PARENT_ID}-0${flags}` : name === 'tracestate' ? tracestate : undefined,
  );
}

describe('tracing settings (OTEL_*)', () => {
  it('records nothing unless an endpoint is set, and names the service after itself', () => {
    expect(settingsOf({})).to.deep.include({ tracesUrl: undefined, serviceName: 'svc', sampler: 'parentbased_always_on', samplerRatio: 1 });
  });

  it('posts to the endpoint’s /v1/traces, or to the traces endpoint as given', () => {
    expect(settingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).tracesUrl).to.equal('http://collector:4318/v1/traces');
    expect(settingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://b/otlp' }).tracesUrl).to.equal(
      'https://b/otlp',
    );
  });

  it('turns export off for OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none', () => {
    expect(settingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }).tracesUrl).to.equal(undefined);
    expect(settingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }).tracesUrl).to.equal(undefined);
  });

  it('reads the sampler, its ratio, the service name, resource attributes and batching', () => {
    const settings = settingsOf({
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.1',
      OTEL_SERVICE_NAME: 'edge',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=staging,team=platform',
      OTEL_BSP_MAX_QUEUE_SIZE: '100',
    });
    expect(settings).to.deep.include({ sampler: 'parentbased_traceidratio', samplerRatio: 0.1, serviceName: 'edge' });
    expect(settings.resourceAttributes).to.deep.equal({ 'deployment.environment.name': 'staging', team: 'platform' });
    // The batch follows a queue set below its default.
    expect(settings.batching).to.deep.include({ maxQueueSize: 100, maxExportBatchSize: 100 });
  });

  for (const [variable, value, problem] of [
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'collector:4318', /OTEL_EXPORTER_OTLP_ENDPOINT: must be an http/],
    ['OTEL_EXPORTER_OTLP_PROTOCOL', 'grpc', /OTEL_EXPORTER_OTLP_PROTOCOL/],
    ['OTEL_TRACES_SAMPLER', 'jaeger_remote', /OTEL_TRACES_SAMPLER/],
    ['OTEL_TRACES_SAMPLER_ARG', '1.5', /OTEL_TRACES_SAMPLER_ARG: must be a number from 0 to 1/],
    ['OTEL_SDK_DISABLED', 'yes please', /OTEL_SDK_DISABLED/],
    ['OTEL_RESOURCE_ATTRIBUTES', 'no-equals-sign', /OTEL_RESOURCE_ATTRIBUTES/],
    ['OTEL_BSP_MAX_EXPORT_BATCH_SIZE', '5000', /OTEL_BSP_MAX_EXPORT_BATCH_SIZE: must not exceed OTEL_BSP_MAX_QUEUE_SIZE/],
  ] as const) {
    it(`refuses ${variable}=${value} in one line naming it`, () => {
      expect(() => settingsOf({ [variable]: value })).to.throw(problem);
    });
  }
});

describe('trace context', () => {
  it('gives a span of a remote parent its own id in the parent’s trace, keeping flags and state, when nothing records', () => {
    for (const flags of [TraceFlags.SAMPLED, TraceFlags.NONE]) {
      const span = NON_RECORDING_TRACER.startSpan('x', {}, remote(flags, 'vendor=abc'));
      expect(span.isRecording()).to.equal(false);
      const context = span.spanContext();
      expect(context.traceId).to.equal(TRACE_ID);
      expect(context.spanId).to.match(/^[0-9a-f]{16}$/).and.not.equal(PARENT_ID);
      expect(traceHeaders(span)).to.deep.equal({ traceparent: `00-${TRACE_ID}-${context.spanId}-0${flags}`, tracestate: 'vendor=abc' });
    }
  });

  it('writes the fields as OpenTelemetry’s W3C propagator does', () => {
    for (const flags of [TraceFlags.SAMPLED, TraceFlags.NONE]) {
      for (const state of [undefined, 'vendor=abc,other=1']) {
        const span = NON_RECORDING_TRACER.startSpan('x', {}, remote(flags, state));
        const injected: Record<string, string> = {};
        TRACE_CONTEXT.inject(trace.setSpan(ROOT_CONTEXT, span), injected, { set: (carrier, name, value) => (carrier[name] = value) });
        expect(traceHeaders(span)).to.deep.equal(injected);
      }
    }
  });

  it('never makes an all-zero id, which W3C Trace Context calls invalid', () => {
    const random = Math.random;
    Math.random = () => 0;
    try {
      const context = NON_RECORDING_TRACER.startSpan('x', {}, ROOT_CONTEXT).spanContext();
      expect([context.traceId, context.spanId]).to.deep.equal([`${'0'.repeat(30)}01`, `${'0'.repeat(14)}01`]);
    } finally {
      Math.random = random;
    }
  });

  it('starts a new trace without a valid parent', () => {
    const first = NON_RECORDING_TRACER.startSpan('x', {}, extractTraceContext({}, () => undefined)).spanContext();
    const second = NON_RECORDING_TRACER.startSpan('x', {}, extractTraceContext({}, (_carrier, name) => (name === 'traceparent' ? 'garbage' : undefined))).spanContext();
    expect(first.traceId).to.match(/^[0-9a-f]{32}$/).and.not.equal(second.traceId);
    expect(traceHeaders(trace.wrapSpanContext({ traceId: '0'.repeat(32), spanId: '0'.repeat(16), traceFlags: 0 } as SpanContext))).to.deep.equal({});
  });
});

/** Tracing settings that export to `url` (or to the test's exporter) every millisecond. */
function exporting(overrides: Partial<TracingSettings> = {}): TracingSettings {
  return {
    ...settingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_BSP_SCHEDULE_DELAY: '1' }),
    ...overrides,
  };
}

/** An exporter that keeps what it is given (the SDK's in-memory one forgets it on shutdown). */
function collecting(): SpanExporter & { readonly spans: ReadableSpan[] } {
  const spans: ReadableSpan[] = [];
  return {
    spans,
    export: (batch, done) => {
      spans.push(...batch);
      done({ code: ExportResultCode.SUCCESS });
    },
    shutdown: () => Promise.resolve(),
  };
}

describe('tracing', () => {
  it('records with the parent’s sampling decision under the default sampler', async () => {
    const exporter = collecting();
    const tracing = createTracing(exporting(), { exporter });
    tracing.tracer.startSpan('sampled', {}, remote(TraceFlags.SAMPLED)).end();
    tracing.tracer.startSpan('not sampled', {}, remote(TraceFlags.NONE)).end();
    tracing.tracer.startSpan('root', {}, ROOT_CONTEXT).end();
    await tracing.shutdown();
    const { spans } = exporter;
    expect(spans.map((span) => span.name)).to.deep.equal(['sampled', 'root']);
    expect(spans[0]!.parentSpanContext?.spanId).to.equal(PARENT_ID);
    expect(spans[0]!.resource.attributes['service.name']).to.equal('svc');
  });

  it('samples a ratio of new traces under traceidratio', async () => {
    const exporter = collecting();
    const tracing = createTracing(exporting({ sampler: 'traceidratio', samplerRatio: 0.1 }), { exporter });
    for (let index = 0; index < 2000; index += 1) tracing.tracer.startSpan('x').end();
    await tracing.shutdown();
    expect(exporter.spans.length).to.be.within(100, 300);
  });

  it('reports failed exports at most once per interval, with how many failed', async () => {
    let now = 0;
    const reports: number[] = [];
    let attempts = 0;
    const failing: SpanExporter = {
      export: (_spans: ReadableSpan[], done) => {
        attempts += 1;
        done({ code: ExportResultCode.FAILED, error: new Error('refused') });
      },
      shutdown: () => Promise.resolve(),
    };
    const tracing = createTracing(exporting(), { exporter: failing, now: () => now, onExportFailure: (failures) => reports.push(failures) });
    const exportOne = async (): Promise<void> => {
      const before = attempts;
      tracing.tracer.startSpan('x').end();
      await waitFor(() => attempts > before, 5000);
    };
    await exportOne();
    await exportOne();
    now += EXPORT_FAILURE_REPORT_MS;
    await exportOne();
    await tracing.shutdown();
    expect(reports).to.deep.equal([1, 2]);
  });

  it('keeps memory bounded and shuts down in bounded time when the collector’s port is closed', async function () {
    this.timeout(30_000);
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const closed = createServer().listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const { port } = closed.address() as { port: number };
    closed.close();
    const tracing = createTracing({ ...exporting(), tracesUrl: `http://127.0.0.1:${port}/v1/traces`, batching: { ...exporting().batching, maxQueueSize: 256, maxExportBatchSize: 64 } });
    const attributes = { 'http.route': '/v1/pets', 'petstore.request_id': 'r'.repeat(36) };
    const burst = (): void => {
      for (let index = 0; index < 20_000; index += 1) tracing.tracer.startSpan('GET /v1/pets', { attributes }).end();
    };
    burst();
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let round = 0; round < 5; round += 1) {
      burst();
      await new Promise((resolve) => setImmediate(resolve));
    }
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    // 100,000 spans kept would be well over 100 MB; the queue holds 256.
    expect(grown).to.be.below(20 * 1024 * 1024);
    const started = performance.now();
    await tracing.shutdown();
    expect(performance.now() - started).to.be.below(SHUTDOWN_FLUSH_MS + 1000);
  });
});
