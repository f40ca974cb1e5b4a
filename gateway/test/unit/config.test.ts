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

  it('lists every variable it reads', () => {
    expect(ENVIRONMENT_VARIABLES).to.include.members(['PORT', 'ADMIN_PORT', 'PET_SERVICE_ADDR', 'LOG_LEVEL', 'SHUTDOWN_DELAY_MS', 'NODE_ENV']);
    expect(ENVIRONMENT_VARIABLES).to.not.include('PET_SERVICE_PORT');
  });
});
