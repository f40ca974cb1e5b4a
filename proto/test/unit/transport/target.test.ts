import { expect } from 'chai';
import { InvalidTargetError, parseTarget, splitHostPort } from '../../../transport/target';

describe('parseTarget: gRPC targets as grpc-js reads them', () => {
  it('reads a host name with or without dns:, and with an empty or a DNS server authority', () => {
    for (const target of ['pets.test:50051', 'dns:pets.test:50051', 'dns:///pets.test:50051']) {
      expect(parseTarget(target), target).to.deep.equal({ kind: 'dns', host: 'pets.test', port: 50051, dnsServer: undefined, authority: 'pets.test:50051' });
    }
    expect(parseTarget('dns://10.0.0.10:53/pets.test:50051')).to.deep.include({ kind: 'dns', host: 'pets.test', dnsServer: '10.0.0.10:53' });
    expect(parseTarget('localhost:50051')).to.deep.include({ kind: 'dns', host: 'localhost', port: 50051 });
  });

  it('gives a target without a port gRPC’s default, 443', () => {
    expect(parseTarget('pets.test')).to.deep.include({ host: 'pets.test', port: 443, authority: 'pets.test:443' });
    expect(parseTarget('[::1]')).to.deep.equal({ kind: 'static', addresses: [{ host: '::1', port: 443 }], authority: '[::1]:443' });
  });

  it('takes an IP address as it is, without resolution: IPv4, bracketed and bare IPv6, under dns: too', () => {
    expect(parseTarget('127.0.0.1:50051')).to.deep.equal({ kind: 'static', addresses: [{ host: '127.0.0.1', port: 50051 }], authority: '127.0.0.1:50051' });
    expect(parseTarget('dns:///127.0.0.1:50051')).to.deep.equal(parseTarget('127.0.0.1:50051'));
    expect(parseTarget('[::1]:50051')).to.deep.equal({ kind: 'static', addresses: [{ host: '::1', port: 50051 }], authority: '[::1]:50051' });
    expect(parseTarget('dns:///[::1]:50051')).to.deep.equal(parseTarget('[::1]:50051'));
    expect(parseTarget('fe80::1')).to.deep.equal({ kind: 'static', addresses: [{ host: 'fe80::1', port: 443 }], authority: '[fe80::1]:443' });
  });

  it('reads ipv4: and ipv6: address lists, and unix sockets', () => {
    expect(parseTarget('ipv4:127.0.0.1:1,127.0.0.2:2')).to.deep.equal({
      kind: 'static',
      addresses: [
        { host: '127.0.0.1', port: 1 },
        { host: '127.0.0.2', port: 2 },
      ],
      authority: '127.0.0.1:1',
    });
    expect(parseTarget('ipv6:[::1]:5,[::2]')).to.deep.equal({
      kind: 'static',
      addresses: [
        { host: '::1', port: 5 },
        { host: '::2', port: 443 },
      ],
      authority: '[::1]:5',
    });
    expect(parseTarget('unix:/run/pets.sock')).to.deep.equal({ kind: 'static', addresses: [{ path: '/run/pets.sock' }], authority: 'localhost' });
    expect(parseTarget('unix:///run/pets.sock')).to.deep.equal(parseTarget('unix:/run/pets.sock'));
    expect(parseTarget('unix:pets.sock')).to.deep.include({ addresses: [{ path: 'pets.sock' }] });
    expect(parseTarget('unix-abstract:pets')).to.deep.include({ addresses: [{ path: '\0pets' }] });
  });

  it('refuses what is no target, naming it', () => {
    for (const target of ['', ':50051', 'pets.test:port', 'pets.test:70000', '[127.0.0.1]:1', '[::1', 'ipv4:pets.test:1', 'ipv6:127.0.0.1:1', 'pets test:1', 'pets..', 'pets..test:1', '-pets:1', 'a:1:b']) {
      expect(() => parseTarget(target), JSON.stringify(target)).to.throw(InvalidTargetError, JSON.stringify(target));
    }
  });

  it('accepts every target the gateway’s PET_SERVICE_ADDR validator accepts', () => {
    // gateway/src/config.ts grpcTarget: what it lets through must not fail later, at start-up.
    for (const target of ['localhost:50051', 'pet-service:50051', 'dns:///pet-service.petstore.svc.cluster.local:50051', 'dns://8.8.8.8/pets.test:1', '10.0.0.7:50051', '[::1]:50051', '::1', 'ipv4:10.0.0.1:5', 'unix:/tmp/s', 'unix-abstract:s', 'pets.test']) {
      expect(() => parseTarget(target), target).to.not.throw();
    }
  });
});

describe('splitHostPort', () => {
  it('splits as grpc-js does', () => {
    expect(splitHostPort('a:1')).to.deep.equal({ host: 'a', port: 1 });
    expect(splitHostPort('a')).to.deep.equal({ host: 'a', port: undefined });
    expect(splitHostPort('[::1]:2')).to.deep.equal({ host: '::1', port: 2 });
    expect(splitHostPort('::1')).to.deep.equal({ host: '::1', port: undefined });
    expect(splitHostPort('[::1]x')).to.equal(undefined);
    expect(splitHostPort('a:b:c')).to.equal(undefined);
  });
});
