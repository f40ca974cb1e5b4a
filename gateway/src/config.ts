import { cleanEnv, EnvError, makeValidator, num, str } from 'envalid';

/** The gateway's settings, read once at startup by `main.ts`. */
export interface GatewayConfig {
  readonly host: string;
  readonly port: number;
  /** gRPC target of the pet service. */
  readonly petServiceAddress: string;
  readonly petServiceTimeoutMs: number;
  readonly apiKeysFile: string;
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
    },
    { reporter: throwOnError },
  );
  if (!(parsed.PET_SERVICE_TIMEOUT_MS > 0)) throw new Error('invalid configuration: PET_SERVICE_TIMEOUT_MS: must be positive');
  return Object.freeze({
    host: parsed.HOST,
    port: parsed.PORT,
    petServiceAddress: parsed.PET_SERVICE_ADDR,
    petServiceTimeoutMs: parsed.PET_SERVICE_TIMEOUT_MS,
    apiKeysFile: parsed.API_KEYS_FILE,
  });
}

function throwOnError({ errors }: { errors: Partial<Record<string, Error>> }): void {
  const problems = Object.entries(errors).map(([name, error]) => `${name}: ${error?.message ?? 'invalid'}`);
  if (problems.length > 0) throw new Error(`invalid configuration: ${problems.join('; ')}`);
}
