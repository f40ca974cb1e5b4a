import { parseKeyPairsIntoRecord } from '@opentelemetry/core';
import { bool, EnvError, makeValidator, str } from 'envalid';
import { ConfigError, nonNegativeInteger, positiveInteger, requireUrlScheme } from './env';

/** The samplers OpenTelemetry's `OTEL_TRACES_SAMPLER` names that this SDK setup builds. */
export const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

export type SamplerName = (typeof SAMPLERS)[number];

/** Span batching: what is queued beyond the limit is dropped, so a collector that is down costs bounded memory. */
export interface SpanBatching {
  readonly maxQueueSize: number;
  readonly maxExportBatchSize: number;
  readonly scheduledDelayMillis: number;
  readonly exportTimeoutMillis: number;
}

/** OpenTelemetry's defaults for the batch span processor, which the OTEL_BSP_* variables override. */
export const DEFAULT_SPAN_BATCHING: SpanBatching = {
  maxQueueSize: 2048,
  maxExportBatchSize: 512,
  scheduledDelayMillis: 5000,
  exportTimeoutMillis: 30000,
};

/** What {@link tracingSettings} makes of the `OTEL_*` variables. */
export interface TracingSettings {
  /**
   * The OTLP/HTTP (protobuf) URL spans are posted to; undefined: spans are not recorded, but trace
   * context still propagates and log lines still carry trace and span ids.
   */
  readonly tracesUrl: string | undefined;
  /** `service.name` of every span; the service's own name unless OTEL_SERVICE_NAME says otherwise. */
  readonly serviceName: string;
  /** Further resource attributes (OTEL_RESOURCE_ATTRIBUTES). */
  readonly resourceAttributes: Readonly<Record<string, string>>;
  readonly sampler: SamplerName;
  /** The ratio of the `traceidratio` samplers, 0 to 1. */
  readonly samplerRatio: number;
  readonly batching: SpanBatching;
}

const otlpUrl = makeValidator<string>((input) => {
  requireUrlScheme(input, ['http:', 'https:'], 'must be an http:// or https:// URL');
  return input;
});

const ratio = makeValidator<string>((input) => {
  const value = Number(input);
  if (input.trim() === '' || !(value >= 0 && value <= 1)) throw new EnvError('must be a number from 0 to 1');
  return input;
});

const keyValuePairs = makeValidator<string>((input) => {
  for (const pair of input.split(',')) {
    if (pair.trim() !== '' && !/^[^=]+=.*$/.test(pair)) throw new EnvError('must be comma-separated key=value pairs');
  }
  return input;
});

/**
 * OpenTelemetry's standard variables, as both services read them. Export is off unless an
 * endpoint is set (OpenTelemetry's own default of localhost:4318 would have every process post to
 * a collector nobody runs). Only OTLP over HTTP with protobuf is built in; the exporter itself
 * reads the OTLP headers, timeout and compression variables.
 */
export const TRACING_ENV = {
  OTEL_SDK_DISABLED: bool({ default: false, desc: 'true: no span is recorded or exported; trace context still propagates' }),
  OTEL_SERVICE_NAME: str({ default: '', desc: "service.name of the spans; default: the service's name" }),
  OTEL_RESOURCE_ATTRIBUTES: keyValuePairs({ default: '', desc: 'More resource attributes, key=value,…' }),
  OTEL_EXPORTER_OTLP_ENDPOINT: otlpUrl({ default: undefined, desc: 'OTLP/HTTP base URL; spans go to its /v1/traces' }),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: otlpUrl({ default: undefined, desc: 'OTLP/HTTP URL for spans, used as is' }),
  OTEL_EXPORTER_OTLP_PROTOCOL: str({ default: 'http/protobuf', choices: ['http/protobuf'] }),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: str({ default: 'http/protobuf', choices: ['http/protobuf'] }),
  OTEL_TRACES_EXPORTER: str({ default: 'otlp', choices: ['otlp', 'none'] }),
  OTEL_TRACES_SAMPLER: str({ default: 'parentbased_always_on', choices: SAMPLERS }),
  OTEL_TRACES_SAMPLER_ARG: ratio({ default: '1', desc: 'Ratio of the traceidratio samplers' }),
  OTEL_BSP_SCHEDULE_DELAY: nonNegativeInteger({ default: DEFAULT_SPAN_BATCHING.scheduledDelayMillis, desc: 'ms between two exports' }),
  OTEL_BSP_EXPORT_TIMEOUT: positiveInteger({ default: DEFAULT_SPAN_BATCHING.exportTimeoutMillis, desc: 'Longest export, ms' }),
  OTEL_BSP_MAX_QUEUE_SIZE: positiveInteger({ default: DEFAULT_SPAN_BATCHING.maxQueueSize, desc: 'Spans queued at most; more are dropped' }),
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: positiveInteger({
    default: undefined,
    desc: `Spans per export at most; default ${DEFAULT_SPAN_BATCHING.maxExportBatchSize}, or the queue size if smaller`,
  }),
};

/** {@link TRACING_ENV} as envalid's `cleanEnv` returns it. */
export interface TracingEnvironment {
  readonly OTEL_SDK_DISABLED: boolean;
  readonly OTEL_SERVICE_NAME: string;
  readonly OTEL_RESOURCE_ATTRIBUTES: string;
  readonly OTEL_EXPORTER_OTLP_ENDPOINT: string | undefined;
  readonly OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: string | undefined;
  readonly OTEL_TRACES_EXPORTER: string;
  readonly OTEL_TRACES_SAMPLER: string;
  readonly OTEL_TRACES_SAMPLER_ARG: string;
  readonly OTEL_BSP_SCHEDULE_DELAY: number;
  readonly OTEL_BSP_EXPORT_TIMEOUT: number;
  readonly OTEL_BSP_MAX_QUEUE_SIZE: number;
  readonly OTEL_BSP_MAX_EXPORT_BATCH_SIZE: number | undefined;
}

/**
 * The tracing settings of a service called `serviceName`, from its cleaned environment.
 * @throws ConfigError for a batch set larger than the queue.
 */
export function tracingSettings(env: TracingEnvironment, serviceName: string): TracingSettings {
  const batch = env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE ?? Math.min(DEFAULT_SPAN_BATCHING.maxExportBatchSize, env.OTEL_BSP_MAX_QUEUE_SIZE);
  if (batch > env.OTEL_BSP_MAX_QUEUE_SIZE) throw new ConfigError('OTEL_BSP_MAX_EXPORT_BATCH_SIZE: must not exceed OTEL_BSP_MAX_QUEUE_SIZE');
  const exporting = !env.OTEL_SDK_DISABLED && env.OTEL_TRACES_EXPORTER === 'otlp';
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const tracesUrl =
    env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (base === undefined ? undefined : `${base.replace(/\/+$/, '')}/v1/traces`);
  return {
    tracesUrl: exporting ? tracesUrl : undefined,
    serviceName: env.OTEL_SERVICE_NAME === '' ? serviceName : env.OTEL_SERVICE_NAME,
    resourceAttributes: parseKeyPairsIntoRecord(env.OTEL_RESOURCE_ATTRIBUTES),
    sampler: env.OTEL_TRACES_SAMPLER as SamplerName,
    samplerRatio: Number(env.OTEL_TRACES_SAMPLER_ARG),
    batching: {
      maxQueueSize: env.OTEL_BSP_MAX_QUEUE_SIZE,
      maxExportBatchSize: batch,
      scheduledDelayMillis: env.OTEL_BSP_SCHEDULE_DELAY,
      exportTimeoutMillis: env.OTEL_BSP_EXPORT_TIMEOUT,
    },
  };
}
