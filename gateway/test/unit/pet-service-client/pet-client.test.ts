import { ConfigError } from '@petstore/runtime';
import { expect } from 'chai';
import { createPetClient } from '../../../src/pet-service-client/pet-client';

describe('createPetClient', () => {
  it('names PET_SERVICE_ADDR, as one start-up line, for a target the transport cannot read', () => {
    expect(() => createPetClient({ target: 'pets..test:50051', timeoutMs: 2000 })).to.throw(ConfigError, /^invalid configuration: PET_SERVICE_ADDR: gRPC target "pets\.\.test:50051": /);
  });

  it('names the variable of a certificate file that cannot be used', () => {
    expect(() => createPetClient({ target: 'pets.test:50051', timeoutMs: 2000, tls: { caFile: '/nonexistent/ca.crt', certFile: undefined, keyFile: undefined } })).to.throw(
      ConfigError,
      /^invalid configuration: PET_SERVICE_TLS_CA_FILE: cannot read \/nonexistent\/ca\.crt: ENOENT$/,
    );
  });

  it('makes the client without connecting: the first call or readiness check connects', () => {
    const client = createPetClient({ target: 'pets.test:50051', timeoutMs: 2000 });
    try {
      expect(client.transport.state()).to.equal('IDLE');
      expect(client.transport.connections()).to.deep.equal({ connecting: 0, ready: 0, draining: 0, transient_failure: 0, idle: 0 });
    } finally {
      client.close();
    }
  });
});
