import { expect } from 'chai';
import { ENVIRONMENT_VARIABLES, parseConfig } from '../../src/config';

describe('gateway config', () => {
  it('has working defaults', () => {
    expect(parseConfig({}, 'keys.yaml')).to.include({
      port: 8080,
      petServiceAddress: 'localhost:50051',
      petServiceTimeoutMs: 2000,
      apiKeysFile: 'keys.yaml',
    });
  });

  it('reads ROUTES_FILE, empty meaning no proxied routes', () => {
    expect(parseConfig({}, 'k')).to.include({ routesFile: undefined });
    expect(parseConfig({ ROUTES_FILE: '/etc/gateway/routes.yaml' }, 'k')).to.include({ routesFile: '/etc/gateway/routes.yaml' });
  });

  it('reads CORS_ORIGINS: none by default, exact origins, or * alone', () => {
    expect(parseConfig({}, 'k').corsOrigins).to.deep.equal([]);
    expect(parseConfig({ CORS_ORIGINS: ' ' }, 'k').corsOrigins).to.deep.equal([]);
    expect(parseConfig({ CORS_ORIGINS: '*' }, 'k').corsOrigins).to.equal('*');
    expect(parseConfig({ CORS_ORIGINS: 'https://app.example.com, http://127.0.0.1:5173,https://app.example.com' }, 'k').corsOrigins).to.deep.equal([
      'https://app.example.com',
      'http://127.0.0.1:5173',
    ]);
  });

  it('refuses a CORS_ORIGINS entry that no browser would send as its Origin, naming the fix', () => {
    const refusals: Array<[string, RegExp]> = [
      ['https://app.example.com/', /"https:\/\/app\.example\.com\/" is not an origin as browsers send it; write "https:\/\/app\.example\.com"/],
      ['https://app.example.com/path', /write "https:\/\/app\.example\.com"/],
      ['https://App.Example.com', /write "https:\/\/app\.example\.com"/],
      ['https://app.example.com:443', /write "https:\/\/app\.example\.com"/],
      ['https://user@app.example.com', /write "https:\/\/app\.example\.com"/],
      ['app.example.com', /"app\.example\.com" is not an http or https origin/],
      ['null', /"null" is not an http or https origin/],
      ['ftp://files.example.com', /is not an http or https origin/],
      ['https://a.example.com,,https://b.example.com', /"" is not an http or https origin/],
      ['*, https://app.example.com', /"\*" allows every origin, so it must stand alone/],
      ['https://*.example.com', /"https:\/\/\*\.example\.com": no wildcards within an origin; list each origin/],
    ];
    for (const [value, message] of refusals) {
      expect(() => parseConfig({ CORS_ORIGINS: value }, 'k'), value).to.throw(/^invalid configuration: CORS_ORIGINS: /).with.property('message').that.matches(message);
    }
  });

  it('names each bad variable', () => {
    expect(() => parseConfig({ PORT: '-1' }, 'k')).to.throw(/PORT/);
    expect(() => parseConfig({ PET_SERVICE_TIMEOUT_MS: 'soon' }, 'k')).to.throw(/PET_SERVICE_TIMEOUT_MS/);
    expect(() => parseConfig({ PET_SERVICE_TIMEOUT_MS: '-5' }, 'k')).to.throw(/PET_SERVICE_TIMEOUT_MS/);
  });

  it('refuses LOG_PRETTY in production, or without pino-pretty installed', () => {
    const installed = () => true;
    expect(parseConfig({ LOG_PRETTY: 'true' }, 'k', installed)).to.include({ logPretty: true });
    expect(() => parseConfig({ LOG_PRETTY: 'true', NODE_ENV: 'production' }, 'k', installed)).to.throw(/^invalid configuration: LOG_PRETTY: /);
    expect(() => parseConfig({ LOG_PRETTY: 'true' }, 'k', () => false)).to.throw(/^invalid configuration: LOG_PRETTY: pino-pretty/);
    expect(parseConfig({ LOG_PRETTY: 'false', NODE_ENV: 'production' }, 'k', () => false)).to.include({ logPretty: false });
  });

  it('runs GATEWAY_WORKERS only with a shared Redis store', () => {
    expect(parseConfig({}, 'k')).to.include({ workers: 1 });
    expect(parseConfig({ GATEWAY_WORKERS: '2', REDIS_URL: 'redis://127.0.0.1:6379' }, 'k')).to.include({ workers: 2 });
    expect(() => parseConfig({ GATEWAY_WORKERS: '2' }, 'k')).to.throw(/^invalid configuration: GATEWAY_WORKERS: more than 1 needs REDIS_URL/);
    expect(() => parseConfig({ GATEWAY_WORKERS: '0', REDIS_URL: 'redis://h' }, 'k')).to.throw(/GATEWAY_WORKERS/);
    expect(() => parseConfig({ GATEWAY_WORKERS: '65', REDIS_URL: 'redis://h' }, 'k')).to.throw(/GATEWAY_WORKERS: must be at most 64/);
  });

  it('takes SHUTDOWN_DELAY_MS as an integer of 0 or more, 0 by default', () => {
    expect(parseConfig({}, 'k')).to.include({ shutdownDelayMs: 0 });
    expect(parseConfig({ SHUTDOWN_DELAY_MS: '5000' }, 'k')).to.include({ shutdownDelayMs: 5000 });
    for (const bad of ['-1', '1.5', '5s', '']) {
      expect(() => parseConfig({ SHUTDOWN_DELAY_MS: bad }, 'k'), bad).to.throw(/^invalid configuration: SHUTDOWN_DELAY_MS: /);
    }
  });

  it('takes METRICS_KEY_IDS as a bounded list of key ids, none by default', () => {
    expect(parseConfig({}, 'k').metricsKeyIds).to.deep.equal([]);
    expect(parseConfig({ METRICS_KEY_IDS: ' acme, big.customer_2 ,acme' }, 'k').metricsKeyIds).to.deep.equal(['acme', 'big.customer_2']);
    const fifty = Array.from({ length: 50 }, (_, i) => `key-${i}`);
    expect(parseConfig({ METRICS_KEY_IDS: fifty.join(',') }, 'k').metricsKeyIds).to.have.length(50);
    expect(() => parseConfig({ METRICS_KEY_IDS: [...fifty, 'one-more'].join(',') }, 'k')).to.throw(
      /^invalid configuration: METRICS_KEY_IDS: at most 50 key ids \(51 given\)/,
    );
    for (const bad of ['acme,', 'a b', 'x'.repeat(65)]) {
      expect(() => parseConfig({ METRICS_KEY_IDS: bad }, 'k'), bad).to.throw(/^invalid configuration: METRICS_KEY_IDS: .* is not a key id/);
    }
  });

  it('calls the pet service in plaintext unless given a CA; a client certificate needs its key and the CA; refuses half a setting, naming it', () => {
    expect(parseConfig({}, 'k').petServiceTls).to.equal(undefined);
    expect(parseConfig({ PET_SERVICE_TLS_CA_FILE: '/t/ca.crt' }, 'k').petServiceTls).to.deep.equal({ caFile: '/t/ca.crt', certFile: undefined, keyFile: undefined });
    expect(parseConfig({ PET_SERVICE_TLS_CA_FILE: '/t/ca.crt', PET_SERVICE_TLS_CERT_FILE: '/t/c.crt', PET_SERVICE_TLS_KEY_FILE: '/t/c.key' }, 'k').petServiceTls).to.deep.equal({
      caFile: '/t/ca.crt',
      certFile: '/t/c.crt',
      keyFile: '/t/c.key',
    });
    expect(() => parseConfig({ PET_SERVICE_TLS_CA_FILE: '/t/ca.crt', PET_SERVICE_TLS_CERT_FILE: '/t/c.crt' }, 'k')).to.throw('invalid configuration: PET_SERVICE_TLS_KEY_FILE: required with PET_SERVICE_TLS_CERT_FILE');
    expect(() => parseConfig({ PET_SERVICE_TLS_KEY_FILE: '/t/c.key' }, 'k')).to.throw('invalid configuration: PET_SERVICE_TLS_CERT_FILE: required with PET_SERVICE_TLS_KEY_FILE');
    expect(() => parseConfig({ PET_SERVICE_TLS_CERT_FILE: '/t/c.crt', PET_SERVICE_TLS_KEY_FILE: '/t/c.key' }, 'k')).to.throw(/^invalid configuration: PET_SERVICE_TLS_CERT_FILE: applies only with PET_SERVICE_TLS_CA_FILE/);
  });

  it('reads the proxy of the pet service calls from the variables grpc-js reads, for the pet service\'s host; none by default', () => {
    expect(parseConfig({}, 'k').petServiceProxy).to.equal(false);
    expect(parseConfig({ http_proxy: 'http://proxy:3128' }, 'k').petServiceProxy).to.deep.equal({ address: 'proxy:3128' });
    expect(parseConfig({ grpc_proxy: 'http://u:p%40ss@g', https_proxy: 'socks5://ignored' }, 'k').petServiceProxy).to.deep.equal({ address: 'g:80', credentials: 'u:p@ss' });
    const env = { PET_SERVICE_ADDR: 'dns:///pets.petstore.svc.cluster.local:50051', http_proxy: 'http://proxy:3128' };
    expect(parseConfig({ ...env, no_proxy: '.svc.cluster.local' }, 'k').petServiceProxy).to.equal(false);
    expect(parseConfig({ ...env, no_proxy: '.svc.cluster.local', no_grpc_proxy: 'other.test' }, 'k').petServiceProxy, 'no_grpc_proxy first').to.deep.equal({ address: 'proxy:3128' });
    expect(parseConfig({ PET_SERVICE_ADDR: 'unix:/run/pets.sock', http_proxy: 'http://proxy:3128' }, 'k').petServiceProxy, 'a Unix socket').to.equal(false);
    expect(ENVIRONMENT_VARIABLES).to.include.members(['grpc_proxy', 'https_proxy', 'http_proxy', 'no_grpc_proxy', 'no_proxy']);
  });

  it('refuses a proxy variable the client could not use, naming it, where the client would ignore it and connect directly', () => {
    const refusals: Array<[NodeJS.ProcessEnv, string]> = [
      [{ grpc_proxy: 'http://user:p%ZZ@proxy:80' }, 'grpc_proxy: the user or password is not valid percent-encoding (write a % as %25)'],
      [{ http_proxy: 'http://-bad:80' }, 'http_proxy: -bad is neither a host name nor an IP address'],
      [{ https_proxy: 'https://proxy:443' }, 'https_proxy: only an http: CONNECT proxy is supported, not https:'],
      [{ http_proxy: 'proxy:3128' }, 'http_proxy: not a URL; expected http://[user:password@]host[:port]'],
      [{ http_proxy: 'http://' }, 'http_proxy: not a URL; expected http://[user:password@]host[:port]'],
      [{ http_proxy: 'http://proxy:0' }, 'http_proxy: port 0 is no port to connect to'],
      [{ http_proxy: 'http://proxy:3128', no_proxy: 'localhost, .svc' }, 'no_proxy: " .svc" would match no host: entries are host names or name suffixes, IP addresses and IPv4 CIDRs, without spaces'],
      [{ http_proxy: 'http://proxy:3128', no_grpc_proxy: '10.0.0.0/33' }, 'no_grpc_proxy: "10.0.0.0/33" would match no host: entries are host names or name suffixes, IP addresses and IPv4 CIDRs, without spaces'],
      [{ grpc_proxy: 'http://proxy:3128', no_proxy: '*' }, 'no_proxy: "*" would match no host: entries are host names or name suffixes, IP addresses and IPv4 CIDRs, without spaces'],
    ];
    for (const [env, message] of refusals) {
      expect(() => parseConfig(env, 'k'), JSON.stringify(env)).to.throw(`invalid configuration: ${message}`);
    }
    // Not the pet service's proxy: a variable grpc-js would not read, a proxy its host is excepted
    // from, or a no-proxy list without a proxy.
    expect(parseConfig({ grpc_proxy: 'http://proxy:3128', https_proxy: 'https://proxy:443' }, 'k').petServiceProxy).to.deep.equal({ address: 'proxy:3128' });
    expect(parseConfig({ https_proxy: 'https://proxy:443', no_grpc_proxy: 'localhost' }, 'k').petServiceProxy).to.equal(false);
    expect(parseConfig({ no_proxy: 'localhost, .svc' }, 'k').petServiceProxy).to.equal(false);
  });

  it('lists every variable it reads, the secrets’ _FILE twins included', () => {
    expect(ENVIRONMENT_VARIABLES).to.include.members(['PORT', 'ADMIN_PORT', 'PET_SERVICE_ADDR', 'LOG_LEVEL', 'SHUTDOWN_DELAY_MS', 'NODE_ENV']);
    expect(ENVIRONMENT_VARIABLES).to.include.members(['REDIS_URL_FILE', 'REDIS_PASSWORD_FILE', 'REDIS_SENTINEL_PASSWORD_FILE', 'ADMIN_TOKEN_FILE', 'PET_SERVICE_TLS_CA_FILE']);
    expect(ENVIRONMENT_VARIABLES).to.not.include('PET_SERVICE_PORT');
  });
});
