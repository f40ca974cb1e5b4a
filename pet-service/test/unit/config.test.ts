import { expect } from 'chai';
import { ENVIRONMENT_VARIABLES, parseConfig } from '../../src/config';

describe('pet-service config', () => {
  it('defaults to the in-memory store on port 50051', () => {
    expect(parseConfig({})).to.include({ port: 50051, mongodbUri: undefined, mongodbDatabase: 'petstore' });
  });

  it('accepts port 0 and a MongoDB URI', () => {
    expect(parseConfig({ PET_SERVICE_PORT: '0', MONGODB_URI: 'mongodb://x', MONGODB_DB: 'd' })).to.include({
      port: 0,
      mongodbUri: 'mongodb://x',
      mongodbDatabase: 'd',
    });
  });

  it('takes its admin port from PET_SERVICE_ADMIN_PORT over ADMIN_PORT (default 9091), and says which', () => {
    expect(parseConfig({})).to.include({ adminPort: 9091, adminPortVariable: 'ADMIN_PORT' });
    expect(parseConfig({ ADMIN_PORT: '9191' })).to.include({ adminPort: 9191, adminPortVariable: 'ADMIN_PORT' });
    expect(parseConfig({ ADMIN_PORT: '9090', PET_SERVICE_ADMIN_PORT: '0' })).to.include({ adminPort: 0, adminPortVariable: 'PET_SERVICE_ADMIN_PORT' });
    expect(() => parseConfig({ PET_SERVICE_ADMIN_PORT: '9o91' })).to.throw(/^invalid configuration: PET_SERVICE_ADMIN_PORT: /);
  });

  it('names each bad variable', () => {
    expect(() => parseConfig({ PET_SERVICE_PORT: '70000' })).to.throw(/PET_SERVICE_PORT/);
    expect(() => parseConfig({ PET_SERVICE_PORT: 'http' })).to.throw(/PET_SERVICE_PORT/);
    expect(() => parseConfig({ MONGODB_TIMEOUT_MS: '0' })).to.throw(/MONGODB_TIMEOUT_MS/);
  });

  for (const name of ['MONGODB_TIMEOUT_MS', 'STORE_HEALTH_INTERVAL_MS', 'SHUTDOWN_TIMEOUT_MS']) {
    it(`takes ${name} as a positive integer of milliseconds`, () => {
      for (const bad of ['1.5', '0', '-1', '1e3', '']) {
        expect(() => parseConfig({ [name]: bad }), bad).to.throw(new RegExp(`^invalid configuration: ${name}: `));
      }
      expect(() => parseConfig({ [name]: '1500' })).to.not.throw();
    });
  }

  it('bounds the creates one replica sends to the store: 4 at once, 16 waiting, unless told otherwise', () => {
    expect(parseConfig({})).to.include({ maxConcurrentWrites: 4, maxQueuedWrites: 16 });
    expect(parseConfig({ STORE_MAX_CONCURRENT_WRITES: '1', STORE_MAX_QUEUED_WRITES: '0' })).to.include({ maxConcurrentWrites: 1, maxQueuedWrites: 0 });
    expect(() => parseConfig({ STORE_MAX_CONCURRENT_WRITES: '0' })).to.throw(/^invalid configuration: STORE_MAX_CONCURRENT_WRITES: /);
    expect(() => parseConfig({ STORE_MAX_QUEUED_WRITES: '-1' })).to.throw(/^invalid configuration: STORE_MAX_QUEUED_WRITES: /);
  });

  it('bounds the reads one replica sends to the store: 16 at once, 16 waiting, unless told otherwise', () => {
    expect(parseConfig({})).to.include({ maxConcurrentReads: 16, maxQueuedReads: 16 });
    expect(parseConfig({ STORE_MAX_CONCURRENT_READS: '3', STORE_MAX_QUEUED_READS: '0' })).to.include({ maxConcurrentReads: 3, maxQueuedReads: 0 });
    for (const bad of ['0', '-1', '1.5', 'many']) {
      expect(() => parseConfig({ STORE_MAX_CONCURRENT_READS: bad }), bad).to.throw(/^invalid configuration: STORE_MAX_CONCURRENT_READS: /);
    }
    for (const bad of ['-1', '1.5', 'many']) {
      expect(() => parseConfig({ STORE_MAX_QUEUED_READS: bad }), bad).to.throw(/^invalid configuration: STORE_MAX_QUEUED_READS: /);
    }
  });

  it('logs successful calls faster than 100 ms at debug unless LOG_SLOW_CALL_MS says otherwise; 0 logs all at info', () => {
    expect(parseConfig({})).to.include({ slowCallMs: 100 });
    expect(parseConfig({ LOG_SLOW_CALL_MS: '0' })).to.include({ slowCallMs: 0 });
    for (const bad of ['-1', '1.5', 'fast']) {
      expect(() => parseConfig({ LOG_SLOW_CALL_MS: bad }), bad).to.throw(/^invalid configuration: LOG_SLOW_CALL_MS: /);
    }
  });

  it('caps the idempotency keys the embedded store remembers at 10,000 unless told otherwise', () => {
    expect(parseConfig({})).to.include({ idempotencyMaxKeys: 10_000 });
    expect(parseConfig({ IDEMPOTENCY_MAX_KEYS: '5' })).to.include({ idempotencyMaxKeys: 5 });
    expect(() => parseConfig({ IDEMPOTENCY_MAX_KEYS: '0' })).to.throw(/^invalid configuration: IDEMPOTENCY_MAX_KEYS: /);
  });

  it('refuses LOG_PRETTY in production, or without pino-pretty installed', () => {
    const installed = () => true;
    expect(parseConfig({ LOG_PRETTY: 'true' }, installed)).to.include({ logPretty: true });
    expect(() => parseConfig({ LOG_PRETTY: 'true', NODE_ENV: 'production' }, installed)).to.throw(/^invalid configuration: LOG_PRETTY: /);
    expect(() => parseConfig({ LOG_PRETTY: 'true' }, () => false)).to.throw(/^invalid configuration: LOG_PRETTY: pino-pretty/);
    expect(parseConfig({ LOG_PRETTY: 'false', NODE_ENV: 'production' }, () => false)).to.include({ logPretty: false });
  });

  it('reads from the primary unless MONGODB_READ_PREFERENCE names another mode, and refuses an unknown one', () => {
    expect(parseConfig({})).to.include({ mongodbReadPreference: 'primary' });
    for (const mode of ['primaryPreferred', 'secondary', 'secondaryPreferred', 'nearest']) {
      expect(parseConfig({ MONGODB_READ_PREFERENCE: mode })).to.include({ mongodbReadPreference: mode });
    }
    for (const bad of ['Primary', 'secondaries', '']) {
      expect(() => parseConfig({ MONGODB_READ_PREFERENCE: bad }), bad).to.throw(/^invalid configuration: MONGODB_READ_PREFERENCE: /);
    }
  });

  it('reserves 1,000 ids at a time unless MONGODB_ID_BLOCK_SIZE says otherwise', () => {
    expect(parseConfig({})).to.include({ mongodbIdBlockSize: 1000 });
    expect(parseConfig({ MONGODB_ID_BLOCK_SIZE: '1' })).to.include({ mongodbIdBlockSize: 1 });
    for (const bad of ['0', '-5', '1.5', 'many']) {
      expect(() => parseConfig({ MONGODB_ID_BLOCK_SIZE: bad }), bad).to.throw(/^invalid configuration: MONGODB_ID_BLOCK_SIZE: /);
    }
  });

  it('is frozen', () => {
    expect(Object.isFrozen(parseConfig({}))).to.equal(true);
  });

  it('takes SHUTDOWN_DELAY_MS as an integer of 0 or more, 0 by default', () => {
    expect(parseConfig({})).to.include({ shutdownDelayMs: 0 });
    expect(parseConfig({ SHUTDOWN_DELAY_MS: '0' })).to.include({ shutdownDelayMs: 0 });
    expect(parseConfig({ SHUTDOWN_DELAY_MS: '5000' })).to.include({ shutdownDelayMs: 5000 });
    for (const bad of ['-1', '1.5', '5s', '']) {
      expect(() => parseConfig({ SHUTDOWN_DELAY_MS: bad }), bad).to.throw(/^invalid configuration: SHUTDOWN_DELAY_MS: /);
    }
  });

  it('serves plaintext unless given a certificate and key; requires client certificates with a CA; refuses half a setting, naming it', () => {
    expect(parseConfig({}).tls).to.equal(undefined);
    expect(parseConfig({ GRPC_TLS_CERT_FILE: '/t/tls.crt', GRPC_TLS_KEY_FILE: '/t/tls.key' }).tls).to.deep.equal({
      certFile: '/t/tls.crt',
      keyFile: '/t/tls.key',
      clientCaFile: undefined,
    });
    expect(parseConfig({ GRPC_TLS_CERT_FILE: '/t/tls.crt', GRPC_TLS_KEY_FILE: '/t/tls.key', GRPC_TLS_CLIENT_CA_FILE: '/t/ca.crt' }).tls).to.include({ clientCaFile: '/t/ca.crt' });
    expect(() => parseConfig({ GRPC_TLS_CERT_FILE: '/t/tls.crt' })).to.throw('invalid configuration: GRPC_TLS_KEY_FILE: required with GRPC_TLS_CERT_FILE');
    expect(() => parseConfig({ GRPC_TLS_KEY_FILE: '/t/tls.key' })).to.throw('invalid configuration: GRPC_TLS_CERT_FILE: required with GRPC_TLS_KEY_FILE');
    expect(() => parseConfig({ GRPC_TLS_CLIENT_CA_FILE: '/t/ca.crt' })).to.throw(/^invalid configuration: GRPC_TLS_CLIENT_CA_FILE: applies only with GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE/);
  });

  it('lists every variable it reads, the secrets’ _FILE twins included', () => {
    expect(ENVIRONMENT_VARIABLES).to.include.members(['PET_SERVICE_PORT', 'MONGODB_URI', 'PAGE_TOKEN_SECRET', 'LOG_LEVEL', 'SHUTDOWN_DELAY_MS', 'NODE_ENV']);
    expect(ENVIRONMENT_VARIABLES).to.include.members(['MONGODB_URI_FILE', 'PAGE_TOKEN_SECRET_FILE', 'GRPC_TLS_CERT_FILE', 'GRPC_TLS_KEY_FILE', 'GRPC_TLS_CLIENT_CA_FILE']);
    expect(ENVIRONMENT_VARIABLES).to.not.include('PORT');
  });
});
