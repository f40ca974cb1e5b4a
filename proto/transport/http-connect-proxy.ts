import { request } from 'node:http';
import { isIP, isIPv4, type Socket } from 'node:net';
import { HOST_NAME, joinHostPort, parseTarget, type SocketAddress, splitHostPort } from './target';

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

/** The variables a proxy is read from, as grpc-js reads them: the first that is set (not empty). */
export const PROXY_VARIABLES = ['grpc_proxy', 'https_proxy', 'http_proxy'] as const;
/** The variables of the hosts reached without the proxy, as grpc-js reads them: the first that is set. */
export const NO_PROXY_VARIABLES = ['no_grpc_proxy', 'no_proxy'] as const;

/** A proxy setting that cannot be used; `setting` names it: an environment variable, or the `proxy` option. */
export class ProxySettingError extends RangeError {
  constructor(
    readonly setting: string,
    problem: string,
  ) {
    super(`${setting}: ${problem}`);
    this.name = 'ProxySettingError';
  }
}

/**
 * The proxy the environment gives the target `target` (a gRPC target, as {@link parseTarget}
 * reads it), read as grpc-js reads it: `grpc_proxy`, else `https_proxy`, else `http_proxy` (an
 * `http:` URL, port 80 by default, user and password as credentials), unless the target's host
 * matches `no_grpc_proxy` (else `no_proxy`): an entry that ends it (a name or a suffix) or an IPv4
 * CIDR holding it. Undefined: connect directly (a Unix socket always is).
 *
 * Strict, for a service that validates its configuration at start-up: a value that cannot be used
 * is a {@link ProxySettingError} naming its variable (a proxy that is no `http:` URL with a host
 * name or address, a port and credentials in valid percent-encoding; with a proxy set, a no-proxy
 * entry that could match no host). A proxy is judged only where it would be used, so a no-proxy
 * entry for the target's host leaves an unusable proxy meant for other programs alone.
 * @throws ProxySettingError; InvalidTargetError for a target that is none
 */
export function environmentProxy(target: string, env: NodeJS.ProcessEnv): ProxySettings | undefined {
  return readEnvironmentProxy(target, env, true);
}

/**
 * {@link environmentProxy} as the transport reads it by default: a value that cannot be used is
 * ignored, as grpc-js ignores a proxy it cannot parse (an unusable proxy: connect directly; a
 * no-proxy entry that can match no host: none matches).
 */
export function proxyFromEnvironment(target: string, env: NodeJS.ProcessEnv = process.env): ProxySettings | undefined {
  return readEnvironmentProxy(target, env, false);
}

function readEnvironmentProxy(target: string, env: NodeJS.ProcessEnv, strict: boolean): ProxySettings | undefined {
  const proxyVariable = PROXY_VARIABLES.find((name) => env[name]);
  if (proxyVariable === undefined) return undefined;
  const noProxyVariable = NO_PROXY_VARIABLES.find((name) => env[name]);
  const exceptions = noProxyVariable === undefined ? [] : env[noProxyVariable]!.split(',').filter((entry) => entry !== '');
  const useless = strict ? exceptions.find((entry) => !canMatch(entry)) : undefined;
  if (useless !== undefined) {
    throw new ProxySettingError(noProxyVariable!, `${JSON.stringify(useless)} would match no host: entries are host names or name suffixes, IP addresses and IPv4 CIDRs, without spaces`);
  }
  const parsed = parseTarget(target);
  if (parsed.kind === 'static' && parsed.addresses.some((address) => 'path' in address)) return undefined;
  const host = splitHostPort(parsed.authority)?.host ?? '';
  if (exceptions.some((entry) => excepts(entry, host))) return undefined;
  try {
    return parseProxyUrl(proxyVariable, env[proxyVariable]!);
  } catch (error) {
    if (!strict && error instanceof ProxySettingError) return undefined;
    throw error;
  }
}

/** Whether a no-proxy entry can match some host: one that cannot (a space, `*`, a CIDR that is none) is a mistake. */
function canMatch(entry: string): boolean {
  if (/[\s*]/.test(entry)) return false;
  if (!entry.includes('/')) return true;
  const [network, prefix, extra] = entry.split('/');
  return extra === undefined && isIPv4(network!) && /^[0-9]{1,2}$/.test(prefix!) && Number(prefix) <= 32;
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

/** `scheme://`: the text is a URL, not `host:port`. */
const URL_WITH_AUTHORITY = /^[a-z][a-z0-9+.-]*:\/\//i;

/**
 * `http://[user[:password]@]host[:port]` as settings: port 80 by default, the user and password
 * percent-decoded as credentials. @throws ProxySettingError naming `setting`
 */
function parseProxyUrl(setting: string, text: string): ProxySettings {
  let url: URL | undefined;
  try {
    if (URL_WITH_AUTHORITY.test(text)) url = new URL(text);
  } catch {
    // Said below.
  }
  if (url === undefined) throw new ProxySettingError(setting, 'not a URL; expected http://[user:password@]host[:port]');
  if (url.protocol !== 'http:') throw new ProxySettingError(setting, `only an http: CONNECT proxy is supported, not ${url.protocol}`);
  if (url.port === '0') throw new ProxySettingError(setting, 'port 0 is no port to connect to');
  const address = `${url.hostname}:${url.port === '' ? '80' : url.port}`;
  const host = splitHostPort(address)?.host ?? '';
  if (isIP(host) === 0 && !HOST_NAME.test(host)) throw new ProxySettingError(setting, `${host} is neither a host name nor an IP address`);
  if (url.username === '') return { address };
  try {
    return { address, credentials: decodeURIComponent(url.password === '' ? url.username : `${url.username}:${url.password}`) };
  } catch {
    // The credentials themselves are never repeated: they may be half a password.
    throw new ProxySettingError(setting, 'the user or password is not valid percent-encoding (write a % as %25)');
  }
}

/** `proxy` option text (`host:port` or `http://[user:password@]host:port`) as settings. @throws ProxySettingError, a RangeError */
export function parseProxyOption(option: string): ProxySettings {
  if (URL_WITH_AUTHORITY.test(option)) return parseProxyUrl('proxy', option);
  if (splitHostPort(option)?.port === undefined) throw new ProxySettingError('proxy', `expected host:port or http://host:port, not ${JSON.stringify(option)}`);
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
