import { bool, EnvError, makeValidator, str } from 'envalid';
import { isPinoPrettyInstalled } from './logger';

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

/** An integer of 0 or more, e.g. a delay that may be switched off. */
export const nonNegativeInteger = makeValidator<number>((input) => {
  const value = Number(input);
  if (!/^[0-9]+$/.test(input) || !Number.isSafeInteger(value)) throw new EnvError('must be an integer of 0 or more');
  return value;
});

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
export class ConfigError extends Error {
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
