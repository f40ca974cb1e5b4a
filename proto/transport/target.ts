import { isIP } from 'node:net';

/** gRPC's default port, for a target that names none (grpc/grpc naming.md). */
export const DEFAULT_PORT = 443;

/** Where one connection goes: a TCP host (an IP address, or a name only behind a proxy) and port, or a Unix socket. */
export type SocketAddress = { readonly host: string; readonly port: number } | { readonly path: string };

/**
 * A target as gRPC reads it (grpc/grpc naming.md, as grpc-js parses it):
 * - `dns`: a name to resolve, every A and AAAA record an address (`name:port`, `dns:name:port`,
 *   `dns:///name:port`, `dns://server/name:port` to ask that DNS server); an IP address there
 *   needs no resolution and is `static`;
 * - `static`: addresses as written (an IP literal, `[::1]:port`, `ipv4:a:p,b:p`, `ipv6:[a]:p`,
 *   `unix:path`, `unix:///absolute`, `unix-abstract:name`).
 */
export type Target =
  | { readonly kind: 'dns'; readonly host: string; readonly port: number; readonly dnsServer: string | undefined; readonly authority: string }
  | { readonly kind: 'static'; readonly addresses: readonly SocketAddress[]; readonly authority: string };

/** A target that is not one, named in the message. */
export class InvalidTargetError extends RangeError {
  constructor(target: string, problem: string) {
    super(`gRPC target ${JSON.stringify(target)}: ${problem}`);
    this.name = 'InvalidTargetError';
  }
}

/** `scheme:`, `//authority/`, path: grpc-js's reading of a target URI. */
const URI = /^(?:([A-Za-z0-9+.-]+):)?(?:\/\/([^/]*)\/)?(.+)$/;

/** @throws InvalidTargetError */
export function parseTarget(target: string): Target {
  const uri = URI.exec(target);
  const scheme = uri?.[1];
  const path = uri?.[3];
  if (uri !== null && path !== undefined) {
    if (scheme === 'dns') return dnsTarget(target, path, uri[2]);
    if (scheme === 'ipv4' || scheme === 'ipv6') return addressList(target, path, scheme === 'ipv4' ? 4 : 6);
    if (scheme === 'unix') return { kind: 'static', addresses: [{ path: uri[2] === undefined ? path : `/${path}` }], authority: 'localhost' };
    if (scheme === 'unix-abstract') return { kind: 'static', addresses: [{ path: `\0${path}` }], authority: 'localhost' };
  }
  // Any other scheme is no scheme: `localhost:50051` and `127.0.0.1:50051` are dns targets.
  return dnsTarget(target, target, undefined);
}

function dnsTarget(target: string, path: string, dnsServer: string | undefined): Target {
  const hostPort = splitHostPort(path);
  if (hostPort === undefined || hostPort.host === '') throw new InvalidTargetError(target, 'expected host:port, [IPv6]:port or dns:///host:port');
  const port = hostPort.port ?? DEFAULT_PORT;
  const authority = joinHostPort(hostPort.host, port);
  if (isIP(hostPort.host) !== 0) return { kind: 'static', addresses: [{ host: hostPort.host, port }], authority };
  if (!HOST_NAME.test(hostPort.host)) throw new InvalidTargetError(target, `${hostPort.host} is neither a host name nor an IP address`);
  return { kind: 'dns', host: hostPort.host, port, dnsServer: dnsServer === '' ? undefined : dnsServer, authority };
}

/** Dot-separated labels of letters, digits, `-` and `_` (not at a label's ends), a final dot allowed. */
export const HOST_NAME = /^[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?)*\.?$/;

function addressList(target: string, path: string, family: 4 | 6): Target {
  const addresses: SocketAddress[] = [];
  for (const entry of path.split(',')) {
    const hostPort = splitHostPort(entry);
    if (hostPort === undefined || isIP(hostPort.host) !== family) throw new InvalidTargetError(target, `${entry} is not an IPv${family} address`);
    addresses.push({ host: hostPort.host, port: hostPort.port ?? DEFAULT_PORT });
  }
  const first = addresses[0] as { host: string; port: number };
  return { kind: 'static', addresses, authority: joinHostPort(first.host, first.port) };
}

/**
 * `host:port`, `[v6]:port`, `host`, `[v6]`, or a bare IPv6 address (more than one colon), as grpc-js
 * splits them; undefined when the text is none of these or the port is no port.
 */
export function splitHostPort(text: string): { host: string; port: number | undefined } | undefined {
  if (text.startsWith('[')) {
    const end = text.indexOf(']');
    if (end === -1) return undefined;
    const host = text.slice(1, end);
    if (!host.includes(':')) return undefined;
    const rest = text.slice(end + 1);
    if (rest === '') return { host, port: undefined };
    const port = rest.startsWith(':') ? portOf(rest.slice(1)) : undefined;
    return port === undefined ? undefined : { host, port };
  }
  const parts = text.split(':');
  if (parts.length === 2) {
    const port = portOf(parts[1]!);
    return port === undefined ? undefined : { host: parts[0]!, port };
  }
  return parts.length === 1 || isIP(text) === 6 ? { host: text, port: undefined } : undefined;
}

function portOf(text: string): number | undefined {
  return /^\d{1,5}$/.test(text) && Number(text) <= 65_535 ? Number(text) : undefined;
}

/** `host:port`, an IPv6 address bracketed. */
export function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** An address as logs and errors print it. */
export function addressToString(address: SocketAddress): string {
  return 'path' in address ? address.path.replace('\0', '@') : joinHostPort(address.host, address.port);
}
