import { request } from 'node:http';
import { isIPv4, type Socket } from 'node:net';
import { joinHostPort, type SocketAddress, splitHostPort } from './target';

/**
 * An HTTP CONNECT proxy that connections go through: its own address (a target, resolved like
 * any), and the credentials it asks for.
 */
export interface ProxySettings {
  /** `host:port` of the proxy (a name is resolved, every address used). */
  readonly address: string;
  /** `user:password` for `Proxy-Authorization: Basic`, if any. */
  readonly credentials?: string;
}

/**
 * The proxy grpc-js would use for a target on `host` from the environment, read as grpc-js reads
 * it: `grpc_proxy`, else `https_proxy`, else `http_proxy` (an `http:` URL, port 80 by default,
 * user and password as credentials), unless `host` matches `no_grpc_proxy` (else `no_proxy`): an
 * entry that ends it (a name or a suffix) or an IPv4 CIDR holding it. Undefined: connect directly.
 * A value that is no usable URL is ignored, as grpc-js ignores it.
 */
export function proxyFromEnvironment(host: string, env: NodeJS.ProcessEnv = process.env): ProxySettings | undefined {
  const value = env.grpc_proxy || env.https_proxy || env.http_proxy;
  if (!value) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:') return undefined;
  const exceptions = (env.no_grpc_proxy || env.no_proxy || '').split(',').filter((entry) => entry !== '');
  if (exceptions.some((entry) => excepts(entry, host))) return undefined;
  const credentials = url.username === '' ? undefined : decodeURIComponent(url.password === '' ? url.username : `${url.username}:${url.password}`);
  return { address: `${url.hostname}:${url.port === '' ? '80' : url.port}`, ...(credentials === undefined ? {} : { credentials }) };
}

function excepts(entry: string, host: string): boolean {
  const [network, prefix] = entry.split('/');
  if (prefix !== undefined && isIPv4(network!) && isIPv4(host)) {
    const bits = Number(prefix);
    if (!(bits >= 0 && bits <= 32)) return false;
    const mask = bits === 0 ? 0 : (-1 << (32 - bits)) >>> 0;
    return ((ipv4ToInt(network!) & mask) >>> 0) === ((ipv4ToInt(host) & mask) >>> 0);
  }
  return host.endsWith(entry);
}

function ipv4ToInt(address: string): number {
  return address.split('.').reduce((value, octet) => ((value << 8) | Number(octet)) >>> 0, 0);
}

/** `proxy` option text (`host:port` or `http://[user:password@]host:port`) as settings. @throws RangeError */
export function parseProxyOption(option: string): ProxySettings {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(option)) {
    const url = new URL(option);
    if (url.protocol !== 'http:') throw new RangeError(`proxy: only an http: CONNECT proxy is supported, not ${url.protocol}`);
    const credentials = url.username === '' ? undefined : decodeURIComponent(url.password === '' ? url.username : `${url.username}:${url.password}`);
    return { address: `${url.hostname}:${url.port === '' ? '80' : url.port}`, ...(credentials === undefined ? {} : { credentials }) };
  }
  if (splitHostPort(option)?.port === undefined) throw new RangeError(`proxy: expected host:port or http://host:port, not ${JSON.stringify(option)}`);
  return { address: option };
}

/**
 * Opens a tunnel to `destination` (`host:port`, a name the proxy resolves) through the proxy at
 * `proxy`: an HTTP/1.1 CONNECT, answered 200. Resolves with the tunnel's socket; rejects with an
 * Error saying what the proxy answered. `signal` abandons the attempt.
 */
export function connectThroughProxy(proxy: SocketAddress, destination: string, credentials: string | undefined, signal: AbortSignal): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { host: destination };
    if (credentials !== undefined) headers['proxy-authorization'] = `Basic ${Buffer.from(credentials).toString('base64')}`;
    const where = 'path' in proxy ? { socketPath: proxy.path } : { host: proxy.host, port: proxy.port };
    const connect = request({ ...where, method: 'CONNECT', path: destination, headers, agent: false, signal });
    const proxyName = 'path' in proxy ? proxy.path : joinHostPort(proxy.host, proxy.port);
    connect.once('connect', (response, socket: Socket, head: Buffer) => {
      connect.removeAllListeners('error');
      connect.on('error', () => undefined);
      if (response.statusCode === 200) {
        // Bytes the HTTP parser read past the proxy's answer are the server's.
        if (head.length > 0) socket.unshift(head);
        resolve(socket);
      } else {
        socket.destroy();
        reject(new Error(`the proxy ${proxyName} answered CONNECT ${destination} with HTTP ${response.statusCode}`));
      }
    });
    connect.once('error', (error) => reject(new Error(`the proxy ${proxyName} failed CONNECT ${destination}: ${error.message}`)));
    connect.end();
  });
}
