import { expect } from 'chai';
import { environmentProxy, parseProxyOption, proxyFromEnvironment, ProxySettingError } from '../../../transport/http-connect-proxy';
import { createUnaryTransport } from '../../../transport/unary-transport';

describe('HTTP CONNECT proxies: the option and the environment, as grpc-js reads them', () => {
  it('takes grpc_proxy, else https_proxy, else http_proxy; an http: URL, port 80 by default, user and password as credentials', () => {
    expect(proxyFromEnvironment('pets.test', {})).to.equal(undefined);
    expect(proxyFromEnvironment('pets.test', { http_proxy: 'http://proxy:3128' })).to.deep.equal({ address: 'proxy:3128' });
    expect(proxyFromEnvironment('pets.test', { https_proxy: 'http://a', http_proxy: 'http://b' })).to.deep.equal({ address: 'a:80' });
    expect(proxyFromEnvironment('pets.test', { grpc_proxy: 'http://u:p%40ss@g:1', https_proxy: 'http://a' })).to.deep.equal({ address: 'g:1', credentials: 'u:p@ss' });
  });

  it('ignores a value that is no http: URL, as grpc-js does', () => {
    expect(proxyFromEnvironment('pets.test', { http_proxy: 'proxy:3128' })).to.equal(undefined);
    expect(proxyFromEnvironment('pets.test', { http_proxy: 'https://proxy' })).to.equal(undefined);
  });

  // Each once threw out of createUnaryTransport: a URIError (the credentials), a RangeError
  // naming no variable (the host).
  const UNUSABLE: ReadonlyArray<[string, string]> = [
    ['http://user:p%ZZ@proxy:80', 'the user or password is not valid percent-encoding (write a % as %25)'],
    ['http://-bad:80', '-bad is neither a host name nor an IP address'],
    ['http://proxy:0', 'port 0 is no port to connect to'],
  ];

  it('ignores, by default, a proxy it cannot use: bad percent-encoding in the credentials, a host that is none, port 0', () => {
    for (const [value] of UNUSABLE) expect(proxyFromEnvironment('pets.test', { grpc_proxy: value }), value).to.equal(undefined);
  });

  it('read strictly (environmentProxy), refuses a value it cannot use with an error naming the variable, never a bare URIError', () => {
    for (const [value, problem] of UNUSABLE) {
      for (const variable of ['grpc_proxy', 'https_proxy', 'http_proxy']) {
        expect(() => environmentProxy('pets.test', { [variable]: value }), `${variable}=${value}`)
          .to.throw(ProxySettingError, `${variable}: ${problem}`)
          .with.property('setting', variable);
      }
    }
    expect(() => environmentProxy('pets.test', { http_proxy: 'socks5://proxy:1080' })).to.throw(ProxySettingError, 'http_proxy: only an http: CONNECT proxy is supported, not socks5:');
    expect(() => environmentProxy('pets.test', { http_proxy: 'http://proxy:3128', no_proxy: 'a.test, b.test' })).to.throw(ProxySettingError, /^no_proxy: " b\.test" would match no host/);
  });

  it('read strictly, judges only the proxy that would be used: the first variable set, for a host not excepted, never for a Unix socket', () => {
    expect(environmentProxy('pets.test', { grpc_proxy: 'http://g:1', http_proxy: 'http://-bad:80' })).to.deep.equal({ address: 'g:1' });
    expect(environmentProxy('pets.test', { http_proxy: 'http://-bad:80', no_proxy: 'pets.test' })).to.equal(undefined);
    expect(environmentProxy('unix:/run/pets.sock', { http_proxy: 'http://-bad:80' })).to.equal(undefined);
    expect(environmentProxy('pets.test', { no_proxy: 'a.test, b.test' }), 'no proxy, so no list to judge').to.equal(undefined);
  });

  it('refuses the option with a RangeError naming it, whatever is wrong with it', () => {
    const transport = (proxy: string) => () => createUnaryTransport('127.0.0.1:50051', { proxy });
    expect(transport('http://user:p%ZZ@proxy:80')).to.throw(ProxySettingError, 'proxy: the user or password is not valid percent-encoding');
    expect(transport('http://-bad:80')).to.throw(RangeError, 'proxy: -bad is neither a host name nor an IP address');
    expect(transport('-bad:80')).to.throw(RangeError, /^proxy: /);
  });

  it('goes direct to a host that no_grpc_proxy (else no_proxy) names, as a suffix or an IPv4 CIDR', () => {
    const env = { http_proxy: 'http://proxy:3128', no_proxy: 'svc.cluster.local,10.0.0.0/8' };
    expect(proxyFromEnvironment('pets.petstore.svc.cluster.local', env)).to.equal(undefined);
    expect(proxyFromEnvironment('10.1.2.3', env)).to.equal(undefined);
    expect(proxyFromEnvironment('11.1.2.3', env)).to.deep.equal({ address: 'proxy:3128' });
    expect(proxyFromEnvironment('pets.example.com', env)).to.deep.equal({ address: 'proxy:3128' });
    expect(proxyFromEnvironment('pets.test', { ...env, no_grpc_proxy: 'pets.test' }), 'no_grpc_proxy first').to.equal(undefined);
  });

  it('reads the option as host:port or an http: URL, and refuses anything else', () => {
    expect(parseProxyOption('proxy:3128')).to.deep.equal({ address: 'proxy:3128' });
    expect(parseProxyOption('http://u:p@proxy')).to.deep.equal({ address: 'proxy:80', credentials: 'u:p' });
    expect(() => parseProxyOption('proxy')).to.throw(RangeError, /proxy: expected host:port/);
    expect(() => parseProxyOption('socks5://proxy:1080')).to.throw(RangeError, /only an http: CONNECT proxy/);
  });
});
