import { bool, EnvError, makeValidator, str } from 'envalid';
import { isPinoPrettyInstalled } from './logger';
import { StartupError } from './startup-error';

/** A TCP port; 0 asks the system for a free one (tests). */
export const listenPort = makeValidator<number>((input) => {
  const port = Number(input);
  if (!/^[0-9]+$/.test(input) || port > 65535) throw new EnvError('must be a port from 0 to 65535');
  return port;
});

export const positiveInteger = makeValidator<number>((input) => {
  const value = Number(input);
  if (!/^[0-9]+$/.test(input) || !Number.isSafeInteger(value) || value < 1) throw new EnvError('must be a positive integer');
  return value;
});

/**
 * Throws `EnvError(message)` unless `input` parses as a URL whose scheme is one of `protocols`
 * (written as `URL.protocol` gives them: `'https:'`); for validators of URL-valued variables.
 */
export function requireUrlScheme(input: string, protocols: readonly string[], message: string): void {
  let protocol: string;
  try {
    protocol = new URL(input).protocol;
  } catch {
    throw new EnvError(message);
  }
  if (!protocols.includes(protocol)) throw new EnvError(message);
}

/** A count that may be 0. */
export const nonNegativeInteger = makeValidator<number>((input) => {
  const value = Number(input);
  if (!/^[0-9]+$/.test(input) || !Number.isSafeInteger(value)) throw new EnvError('must be a whole number of 0 or more');
  return value;
});

/**
 * The shutdown variables both services read. A rollout needs SHUTDOWN_DELAY_MS at least as long
 * as the load balancer takes to stop sending (endpoint propagation), and the orchestrator's grace
 * period above SHUTDOWN_DELAY_MS + SHUTDOWN_TIMEOUT_MS.
 */
export const SHUTDOWN_ENV = {
  SHUTDOWN_DELAY_MS: nonNegativeInteger({
    default: 0,
    desc: 'On SIGTERM, how long readiness fails while the listener still serves, before it closes',
  }),
  SHUTDOWN_TIMEOUT_MS: positiveInteger({ default: 10000, desc: 'Longest wait for in-flight work after the delay, on SIGTERM' }),
};

/** The logging variables both services read, with the same defaults. */
export const LOGGING_ENV = {
  LOG_LEVEL: str({ default: 'info', choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] }),
  LOG_PRETTY: bool({ default: false, desc: 'Human-readable logs, for development' }),
};

/**
 * envalid's reporter for `cleanEnv`: one Error naming every bad variable, on one line, instead of
 * envalid's default of printing and exiting.
 */
export function throwOnError({ errors }: { errors: Partial<Record<string, Error>> }): void {
  const problems = Object.entries(errors).map(([name, error]) => `${name}: ${error?.message ?? 'invalid'}`);
  if (problems.length > 0) throw new ConfigError(problems.join('; '));
}

/** A configuration problem; its message is the one line a service prints before it exits 1. */
export class ConfigError extends StartupError {
  constructor(problem: string) {
    super(`invalid configuration: ${problem}`);
    this.name = 'ConfigError';
  }
}

/**
 * LOG_PRETTY is for development: refused under NODE_ENV=production, and when pino-pretty (a
 * development dependency) is not installed. `prettyAvailable` is a seam for tests.
 */
export function checkLogPretty(
  pretty: boolean,
  env: NodeJS.ProcessEnv,
  prettyAvailable: () => boolean = isPinoPrettyInstalled,
): void {
  if (!pretty) return;
  if (env.NODE_ENV === 'production') throw new ConfigError('LOG_PRETTY: must be false when NODE_ENV=production');
  if (!prettyAvailable()) throw new ConfigError('LOG_PRETTY: pino-pretty is not installed (a development dependency)');
}
