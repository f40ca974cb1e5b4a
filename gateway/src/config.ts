import { bool, cleanEnv, EnvError, makeValidator, num, str } from 'envalid';

/** The gateway's settings, read once at startup by `main.ts`. */
export interface GatewayConfig {
  readonly host: string;
  readonly port: number;
  /** gRPC target of the pet service. */
  readonly petServiceAddress: string;
  readonly petServiceTimeoutMs: number;
  readonly apiKeysFile: string;
  readonly adminPort: number;
  readonly logLevel: string;
  readonly logPretty: boolean;
  readonly shutdownTimeoutMs: number;
}

const listenPort = makeValidator<number>((input) => {
  const port = Number(input);
  if (!/^[0-9]+$/.test(input) || port > 65535) throw new EnvError('must be a port from 0 to 65535');
  return port;
});

/** Parses and validates the environment. Throws one Error naming every bad variable. */
export function parseConfig(env: NodeJS.ProcessEnv, defaultKeysFile: string): GatewayConfig {
  const parsed = cleanEnv(
    env,
    {
      HOST: str({ default: '0.0.0.0', desc: 'Interface the HTTP server binds' }),
      PORT: listenPort({ default: 8080, desc: 'HTTP port; 0 picks a free one' }),
      PET_SERVICE_ADDR: str({ default: 'localhost:50051', desc: 'gRPC target of the pet service' }),
      PET_SERVICE_TIMEOUT_MS: num({ default: 2000, desc: 'Deadline of every call to the pet service' }),
      API_KEYS_FILE: str({ default: defaultKeysFile, desc: 'YAML or JSON keys file' }),
      ADMIN_PORT: listenPort({ default: 9090, desc: 'Port of /metrics, /healthz and /readyz; 0 picks a free one' }),
      LOG_LEVEL: str({ default: 'info', choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] }),
      LOG_PRETTY: bool({ default: false, desc: 'Human-readable logs, for development' }),
      SHUTDOWN_TIMEOUT_MS: num({ default: 10000, desc: 'Longest wait for in-flight requests on SIGTERM' }),
    },
    { reporter: throwOnError },
  );
  for (const name of ['PET_SERVICE_TIMEOUT_MS', 'SHUTDOWN_TIMEOUT_MS'] as const) {
    if (!(parsed[name] > 0)) throw new Error(`invalid configuration: ${name}: must be a positive number`);
  }
  return Object.freeze({
    host: parsed.HOST,
    port: parsed.PORT,
    petServiceAddress: parsed.PET_SERVICE_ADDR,
    petServiceTimeoutMs: parsed.PET_SERVICE_TIMEOUT_MS,
    apiKeysFile: parsed.API_KEYS_FILE,
    adminPort: parsed.ADMIN_PORT,
    logLevel: parsed.LOG_LEVEL,
    logPretty: parsed.LOG_PRETTY,
    shutdownTimeoutMs: parsed.SHUTDOWN_TIMEOUT_MS,
  });
}

function throwOnError({ errors }: { errors: Partial<Record<string, Error>> }): void {
  const problems = Object.entries(errors).map(([name, error]) => `${name}: ${error?.message ?? 'invalid'}`);
  if (problems.length > 0) throw new Error(`invalid configuration: ${problems.join('; ')}`);
}
