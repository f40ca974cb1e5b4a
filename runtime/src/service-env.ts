import { checkLogPretty, LOGGING_ENV, SHUTDOWN_ENV } from './env';
import { TRACING_ENV, type TracingEnvironment, type TracingSettings, tracingSettings } from './tracing-env';

/**
 * The variables every service reads, with the same names and defaults: logging, shutdown and
 * OpenTelemetry. A service spreads it into its own envalid spec, so its manifest check
 * (`ENVIRONMENT_VARIABLES`) lists them too.
 */
export const SERVICE_ENV = { ...LOGGING_ENV, ...SHUTDOWN_ENV, ...TRACING_ENV };

/** {@link SERVICE_ENV} as envalid's `cleanEnv` returns it. */
export interface ServiceEnvironment extends TracingEnvironment {
  readonly LOG_LEVEL: string;
  readonly LOG_PRETTY: boolean;
  readonly SHUTDOWN_DELAY_MS: number;
  readonly SHUTDOWN_TIMEOUT_MS: number;
}

/** The settings every service takes from {@link SERVICE_ENV}; each service's config embeds them. */
export interface ServiceSettings {
  readonly logLevel: string;
  readonly logPretty: boolean;
  /** On SIGTERM: readiness (or gRPC health) fails at once, the listener serves this long, then closes. */
  readonly shutdownDelayMs: number;
  readonly shutdownTimeoutMs: number;
  /** OpenTelemetry (OTEL_*): export, sampling, service name (docs/operations.md#tracing). */
  readonly tracing: TracingSettings;
}

/**
 * The shared settings of a service called `serviceName`, from its cleaned environment; `env` is
 * the raw one (NODE_ENV) and `prettyAvailable` a seam for tests (default: whether pino-pretty loads).
 * @throws ConfigError naming the variable, for LOG_PRETTY where it is refused or a span batch larger than the queue.
 */
export function serviceSettings(
  parsed: ServiceEnvironment,
  env: NodeJS.ProcessEnv,
  serviceName: string,
  prettyAvailable?: () => boolean,
): ServiceSettings {
  checkLogPretty(parsed.LOG_PRETTY, env, prettyAvailable);
  return {
    logLevel: parsed.LOG_LEVEL,
    logPretty: parsed.LOG_PRETTY,
    shutdownDelayMs: parsed.SHUTDOWN_DELAY_MS,
    shutdownTimeoutMs: parsed.SHUTDOWN_TIMEOUT_MS,
    tracing: tracingSettings(parsed, serviceName),
  };
}
