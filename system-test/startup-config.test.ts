import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';

const ROOT = join(__dirname, '..');

function keysFile(text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'bad-keys-')), 'keys.yaml');
  writeFileSync(file, text);
  return file;
}

function start(service: 'gateway' | 'pet-service', env: NodeJS.ProcessEnv) {
  return spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, service, 'src', 'main.ts')], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', PET_SERVICE_PORT: '0', ADMIN_PORT: '0', ...env },
    encoding: 'utf8',
    timeout: 15_000,
  });
}

describe('startup with bad configuration: one line naming the setting, exit 1', function () {
  this.timeout(20_000);
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
    it(`${service}: ${name}=${value}${Object.entries(extra).map(([key, setting]) => ` ${key}=${setting}`).join('')}`, () => {
      const result = start(service, { ...extra, [name]: value });
      expect(result.status, result.stderr).to.equal(1);
      const lines = result.stderr.trim().split('\n');
      expect(lines, result.stderr).to.have.length(1);
      expect(lines[0]).to.match(message);
    });
  }

  it('pet-service: MONGODB_URI on a closed port names the host and the cause, and exits 1', async () => {
    const closed = await closedPort();
    const result = start('pet-service', { MONGODB_URI: `mongodb://127.0.0.1:${closed}`, MONGODB_TIMEOUT_MS: '500' });
    expect(result.status, result.stderr).to.equal(1);
    const fatal = `${result.stdout}${result.stderr}`.split('\n').filter((line) => line.includes('"level":60'));
    expect(fatal, result.stdout).to.have.length(1);
    const { err } = JSON.parse(fatal[0]!) as { err: { message: string } };
    expect(err.message).to.equal(`pet store unavailable: MongoDB at 127.0.0.1:${closed}: connect ECONNREFUSED 127.0.0.1:${closed}`);
  });
});

/** A port nothing listens on: bound, then released. */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
