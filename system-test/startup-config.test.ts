import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { startMongoOrSkip } from './support/mongo-server';
import { type RedisServer, startRedisOrSkip } from './support/redis-server';
import { runToRefusal, STARTUP_TIMEOUT_MS } from './support/service-process';

function keysFile(text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'bad-keys-')), 'keys.yaml');
  writeFileSync(file, text);
  return file;
}

describe('startup with bad configuration: one line naming the setting, exit 1', function () {
  // Each case starts a process, which may take its whole STARTUP_TIMEOUT_MS on a busy machine.
  this.timeout(STARTUP_TIMEOUT_MS + 20_000);
  const production = { NODE_ENV: 'production' };
  const cases: Array<['gateway' | 'pet-service', string, string, RegExp, NodeJS.ProcessEnv?]> = [
    ['gateway', 'PORT', 'http', /^invalid configuration: PORT: /],
    ['gateway', 'PET_SERVICE_TIMEOUT_MS', '-1', /^invalid configuration: PET_SERVICE_TIMEOUT_MS: /],
    ['gateway', 'LOG_LEVEL', 'loud', /^invalid configuration: LOG_LEVEL: /],
    ['gateway', 'BAN_THRESHOLD', 'ten', /^invalid configuration: BAN_THRESHOLD: /],
    ['gateway', 'REDIS_URL', 'http://localhost:6379', /^invalid configuration: REDIS_URL: /],
    ['gateway', 'TRUST_PROXY', 'the-ingress', /^invalid configuration: TRUST_PROXY: /],
    ['gateway', 'CORS_ORIGINS', 'https://app.example.com/', /^invalid configuration: CORS_ORIGINS: "https:\/\/app\.example\.com\/" is not an origin as browsers send it; write "https:\/\/app\.example\.com"$/],
    ['gateway', 'API_KEYS_FILE', '/nonexistent/keys.yaml', /^API_KEYS_FILE \/nonexistent\/keys\.yaml: /],
    ['gateway', 'API_KEYS_FILE', keysFile(`keys:\n  - id: acme\n    sha256: ${'a'.repeat(64)}\n    plan: platinum\n`), /^API_KEYS_FILE \S+: key "acme": plan must be one of/],
    ['gateway', 'API_KEYS_FILE', keysFile('keys:\n  - id: acme\n   plan: [free\n'), /^API_KEYS_FILE \S+keys\.yaml: .+ at line 3, column \d+$/],
    ['gateway', 'ROUTES_FILE', '/nonexistent/routes.yaml', /^ROUTES_FILE \/nonexistent\/routes\.yaml: /],
    [
      'gateway',
      'ROUTES_FILE',
      keysFile('routes:\n  - prefix: /v1/pets\n    upstream: http://127.0.0.1:9\n    methods: [GET]\n    timeoutMs: 1000\n'),
      /^ROUTES_FILE \S+: routes\[0\] "\/v1\/pets": would shadow the gateway's own \/v1\/pets$/,
    ],
    [
      'gateway',
      'ROUTES_FILE',
      keysFile(
        'routes:\n  - prefix: /v1/store/carts\n    upstream: http://carts\n    methods: [GET]\n    timeoutMs: 1000\n' +
          '  - prefix: /v1/store/orders\n    upstream: http://orders:8080\n    methods: [GET]\n    timeoutMs: soon\n',
      ),
      /^ROUTES_FILE \S+: routes\[1\] "\/v1\/store\/orders": timeoutMs must be a positive integer$/,
    ],
    ['gateway', 'PET_SERVICE_ADDR', '::::', /^invalid configuration: PET_SERVICE_ADDR: must be a gRPC target: /],
    ['gateway', 'PET_SERVICE_ADDR', 'pets:99999', /^invalid configuration: PET_SERVICE_ADDR: must be a gRPC target: /],
    // The proxy the pet service client would use: the other proxy variables emptied, whatever the machine sets.
    ['gateway', 'grpc_proxy', 'http://user:p%ZZ@proxy:80', /^invalid configuration: grpc_proxy: the user or password is not valid percent-encoding/, { no_grpc_proxy: '', no_proxy: '' }],
    ['gateway', 'http_proxy', 'http://-bad:80', /^invalid configuration: http_proxy: -bad is neither a host name nor an IP address$/, { grpc_proxy: '', https_proxy: '', no_grpc_proxy: '', no_proxy: '' }],
    ['gateway', 'OTEL_EXPORTER_OTLP_ENDPOINT', 'collector:4318', /^invalid configuration: OTEL_EXPORTER_OTLP_ENDPOINT: must be an http:\/\/ or https:\/\/ URL$/],
    ['pet-service', 'OTEL_TRACES_SAMPLER_ARG', 'half', /^invalid configuration: OTEL_TRACES_SAMPLER_ARG: must be a number from 0 to 1$/],
    ['pet-service', 'OTEL_EXPORTER_OTLP_PROTOCOL', 'grpc', /^invalid configuration: OTEL_EXPORTER_OTLP_PROTOCOL: /],
    ['pet-service', 'PET_SERVICE_PORT', '99999', /^invalid configuration: PET_SERVICE_PORT: /],
    ['pet-service', 'MONGODB_URI', 'nonsense', /^invalid configuration: MONGODB_URI: not a MongoDB connection string: /],
    ['pet-service', 'MONGODB_URI', 'mongodb://user:hunter2@', /^invalid configuration: MONGODB_URI: not a MongoDB connection string: (?!.*hunter2)/],
    ['pet-service', 'MONGODB_TIMEOUT_MS', '0', /^invalid configuration: MONGODB_TIMEOUT_MS: /],
    ['pet-service', 'SHUTDOWN_TIMEOUT_MS', '2.5', /^invalid configuration: SHUTDOWN_TIMEOUT_MS: /],
    ['pet-service', 'MONGODB_READ_PREFERENCE', 'secondaries', /^invalid configuration: MONGODB_READ_PREFERENCE: /],
    ['gateway', 'ADMIN_TOKEN_FILE', keysFile('a-token-of-twenty-chars'), /^invalid configuration: ADMIN_TOKEN and ADMIN_TOKEN_FILE: set only one/, { ADMIN_TOKEN: 'another-token-of-twenty' }],
    ['gateway', 'REDIS_PASSWORD_FILE', '/nonexistent/password', /^invalid configuration: REDIS_PASSWORD_FILE: cannot read \/nonexistent\/password: ENOENT$/],
    ['gateway', 'PET_SERVICE_TLS_CA_FILE', '/nonexistent/ca.crt', /^invalid configuration: PET_SERVICE_TLS_CA_FILE: cannot read \/nonexistent\/ca\.crt: ENOENT$/],
    ['pet-service', 'MONGODB_URI_FILE', keysFile('mongodb://x'), /^invalid configuration: MONGODB_URI and MONGODB_URI_FILE: set only one/, { MONGODB_URI: 'mongodb://y' }],
    ['pet-service', 'PAGE_TOKEN_SECRET_FILE', keysFile('\n'), /^invalid configuration: PAGE_TOKEN_SECRET_FILE: \S+ is empty$/],
    ['pet-service', 'GRPC_TLS_CERT_FILE', '/nonexistent/tls.crt', /^invalid configuration: GRPC_TLS_CERT_FILE: cannot read \/nonexistent\/tls\.crt: ENOENT$/, { GRPC_TLS_KEY_FILE: '/nonexistent/tls.key' }],
    ['gateway', 'LOG_PRETTY', 'true', /^invalid configuration: LOG_PRETTY: /, production],
    ['pet-service', 'LOG_PRETTY', 'true', /^invalid configuration: LOG_PRETTY: /, production],
  ];
  for (const [service, name, value, message, extra = {}] of cases) {
    it(`${service}: ${name}=${value}${Object.entries(extra).map(([key, setting]) => ` ${key}=${setting}`).join('')}`, async () => {
      const result = await runToRefusal(service, { ...extra, [name]: value });
      expect(result.status, result.stderr).to.equal(1);
      const lines = result.stderr.trim().split('\n');
      expect(lines, result.stderr).to.have.length(1);
      expect(lines[0]).to.match(message);
    });
  }

  it('pet-service: MongoDB refusing the credentials is one line naming MONGODB_URI, and exit 1 (waiting would not fix it)', async function () {
    const mongo = await startMongoOrSkip(this);
    try {
      const uri = new URL(mongo.uri);
      uri.username = 'nobody';
      uri.password = 'hunter2';
      const result = await runToRefusal('pet-service', { MONGODB_URI: uri.toString() });
      expect(result.status, result.stderr).to.equal(1);
      const lines = result.stderr.trim().split('\n');
      expect(lines, result.stderr).to.have.length(1);
      expect(lines[0]).to.match(new RegExp(`^invalid configuration: MONGODB_URI: MongoDB at ${uri.host} refuses the credentials \\(\\S`));
      expect(lines[0]).to.not.include('hunter2');
      expectJsonLines(result.stdout);
    } finally {
      await mongo.close();
    }
  });
});

/**
 * A listener whose port is taken (issue 33: grpc-js's `No address added out of total 1 resolved
 * errors: [listen EADDRINUSE ...]`, or a stack) is one line naming the variable that set the port,
 * and exit 1: every listener of both services, the gateway's also with workers.
 */
describe('startup with a port already in use: one line naming the variable, exit 1', function () {
  // Each case starts a process, which may take its whole STARTUP_TIMEOUT_MS on a busy machine.
  this.timeout(STARTUP_TIMEOUT_MS + 20_000);
  let holder: Server | undefined;

  afterEach(async () => {
    if (holder !== undefined) await new Promise((resolve) => holder!.close(resolve));
    holder = undefined;
  });

  /** Starts `service` with `variable` set to a port this test holds, and checks what it said. */
  async function expectRefusedPort(service: 'gateway' | 'pet-service', variable: string, env: NodeJS.ProcessEnv = {}): Promise<void> {
    holder = createServer();
    await new Promise<void>((resolve) => holder!.listen(0, '0.0.0.0', resolve));
    const port = (holder.address() as AddressInfo).port;
    const result = await runToRefusal(service, { ...env, [variable]: String(port) });
    expect(result.status, result.stderr).to.equal(1);
    expect(result.stderr.trim().split('\n'), result.stderr).to.deep.equal([`${variable} ${port}: address already in use`]);
    expectJsonLines(result.stdout);
  }

  for (const [service, variable, env] of [
    ['gateway', 'PORT'],
    ['gateway', 'ADMIN_PORT'],
    ['pet-service', 'PET_SERVICE_PORT'],
    ['pet-service', 'ADMIN_PORT'],
    ['pet-service', 'PET_SERVICE_ADMIN_PORT', { ADMIN_PORT: '0' }],
  ] as const) {
    it(`${service}: ${variable}`, () => expectRefusedPort(service, variable, env));
  }

  describe('gateway with GATEWAY_WORKERS=2 (the primary says it once, for every worker)', () => {
    let redis: RedisServer | undefined;
    before(async function () {
      redis = await startRedisOrSkip(this);
    });
    after(async () => redis?.stop());

    for (const variable of ['PORT', 'ADMIN_PORT']) {
      it(`gateway: ${variable} GATEWAY_WORKERS=2`, () => expectRefusedPort('gateway', variable, { GATEWAY_WORKERS: '2', REDIS_URL: redis!.url }));
    }
  });
});

/** Every line a service wrote on stdout is a JSON object: libraries' own output included. */
function expectJsonLines(stdout: string): void {
  for (const line of stdout.split('\n').filter((text) => text !== '')) {
    expect(() => JSON.parse(line) as unknown, line).to.not.throw();
  }
}
