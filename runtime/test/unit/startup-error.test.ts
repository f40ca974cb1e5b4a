import { expect } from 'chai';
import { ConfigError } from '../../src/env';
import { listenFailure, StartupError } from '../../src/startup-error';

describe('listenFailure', () => {
  const errno = (code: string, message: string): NodeJS.ErrnoException => Object.assign(new Error(message), { code });

  it('names the variable behind a port in use, from Node’s error code', () => {
    const error = listenFailure(errno('EADDRINUSE', 'listen EADDRINUSE: address already in use 0.0.0.0:8080'), 'PORT', 8080);
    expect(error).to.be.instanceOf(StartupError).and.to.have.property('message', 'PORT 8080: address already in use');
  });

  it('reads grpc-js’s bind failure, which has the code in its text only', () => {
    const grpc = new Error('No address added out of total 1 resolved errors: [listen EADDRINUSE: address already in use 0.0.0.0:50051]');
    expect(listenFailure(grpc, 'PET_SERVICE_PORT', 50051)).to.have.property('message', 'PET_SERVICE_PORT 50051: address already in use');
  });

  it('says a privileged port needs privileges', () => {
    expect(listenFailure(errno('EACCES', 'listen EACCES: permission denied 0.0.0.0:80'), 'PORT', 80)).to.have.property(
      'message',
      'PORT 80: permission denied (a port below 1024 needs privileges)',
    );
  });

  it('leaves any other error as it is', () => {
    const other = errno('ENOTFOUND', 'getaddrinfo ENOTFOUND nowhere');
    expect(listenFailure(other, 'PORT', 8080)).to.equal(other);
    expect(listenFailure('text', 'PORT', 8080)).to.equal('text');
  });

  it('is the same kind of one-line failure as a ConfigError', () => {
    expect(new ConfigError('PORT: must be a port')).to.be.instanceOf(StartupError);
  });
});
