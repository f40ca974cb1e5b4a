import { expect } from 'chai';
import { parseProxyOption, proxyFromEnvironment } from '../../../transport/http-connect-proxy';

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
