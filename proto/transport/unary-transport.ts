import type { OutgoingHttpHeaders } from 'node:http2';
import { isIP } from 'node:net';
import { Metadata, type ServiceError, status as Status } from '@grpc/grpc-js';
import { CertificateFiles, CertificateFilesError, type CertificateFilesOptions, type Certificates } from '../certificate-files';
import { callError, cancelledError } from './call-error';
import { type BackoffOptions, checkBackoff, GRPC_CONNECTION_BACKOFF } from './connection-backoff';
import type { ConnectionSettings, KeepaliveOptions } from './connection';
import { type AddressSource, type ConnectionState, ConnectionPool, type TransportState } from './connection-pool';
import { parseProxyOption, proxyFromEnvironment, type ProxySettings } from './http-connect-proxy';
import { type Lookup, lookupAt, systemLookup } from './name-resolver';
import { InvalidTargetError, parseTarget, splitHostPort, type Target } from './target';
import { UnaryCall } from './unary-call';

export type { BackoffOptions, ConnectionState, KeepaliveOptions, Lookup, TransportState };

/** Per-call settings of {@link UnaryTransport.call}. */
export interface UnaryCallOptions {
  /**
   * When the call must have ended, in milliseconds since the epoch (`Date.now()`'s base): sent as
   * `grpc-timeout` on each attempt, and kept by a local timer (DEADLINE_EXCEEDED). `Infinity`: none.
   */
  readonly deadline: number;
  /** Cancels the call when aborted: its stream is reset with CANCEL, and it rejects with CANCELLED. */
  readonly signal?: AbortSignal | undefined;
  /** Told of the response headers (not of a trailers-only answer's), as grpc-js's `onReceiveMetadata`. */
  readonly onHeaders?: ((headers: Metadata) => void) | undefined;
  /**
   * Told of the trailers of a call that succeeds, just before it resolves (without `grpc-status`
   * and `grpc-message`; `-bin` values decoded), as grpc-js's `onReceiveStatus` gives them with
   * OK. A failed call's trailers are its error's `metadata` instead. A listener that throws fails
   * the call INTERNAL.
   */
  readonly onTrailers?: ((trailers: Metadata) => void) | undefined;
}

/** Settings of {@link createUnaryTransport}; each has a default. */
export interface UnaryTransportOptions {
  /**
   * TLS from PEM files: `caFile` checks the server's certificate, `certFile` and `keyFile` are this
   * client's (mutual TLS). Read now ({@link CertificateFilesError} when they cannot be used) and
   * again every `reloadIntervalMs`: new connections use the set in force. The server's certificate
   * must hold the target's host: a name as a DNS SAN (sent as SNI), an IP address as an IP SAN (no
   * SNI). Without it: plaintext (h2c with prior knowledge).
   */
  readonly tls?: CertificateFilesOptions;
  /** With {@link tls}: the name sent as SNI and checked against the certificate, instead of the target's host. */
  readonly serverNameOverride?: string;
  /** Keepalive pings on every connection, also between calls; `false` for none. Default {@link DEFAULT_KEEPALIVE}. */
  readonly keepalive?: KeepaliveOptions | false;
  /** The largest response message accepted (RESOURCE_EXHAUSTED beyond). Default 4 MiB, gRPC's. */
  readonly maxReceiveMessageBytes?: number;
  /** gRPC's connection backoff, each parameter over {@link GRPC_CONNECTION_BACKOFF}. */
  readonly backoff?: Partial<BackoffOptions>;
  /** Resolves a `dns:` target's name to its addresses (tests). Default: the system's resolver, every A and AAAA record. */
  readonly lookup?: Lookup;
  /** Shortest time between two resolutions of the name. Default {@link DEFAULT_MIN_RESOLUTION_INTERVAL_MS}. */
  readonly minResolutionIntervalMs?: number;
  /** The name is resolved again this long after each resolution. Default {@link DEFAULT_RESOLUTION_REFRESH_MS}. */
  readonly resolutionRefreshMs?: number;
  /**
   * An HTTP CONNECT proxy (`host:port`, `http://[user:password@]host:port`, or its settings)
   * every connection tunnels through, asking it for the target's host and port; `false` for none.
   * A text that is none throws a `ProxySettingError` naming `proxy`. Default: the
   * environment's, as grpc-js reads it (`grpc_proxy`, `https_proxy`, `http_proxy`; `no_grpc_proxy`,
   * `no_proxy`), a value that cannot be used ignored as grpc-js ignores it; a service that would
   * rather refuse one reads it with `environmentProxy` at start-up and passes the result here.
   */
  readonly proxy?: string | ProxySettings | false;
  /** The `user-agent` of every call. */
  readonly userAgent?: string;
}

/**
 * Unary gRPC calls to one target over HTTP/2: {@link createUnaryTransport}. Generic: a method's
 * path, the request message's bytes and metadata in; the response message's bytes out, or an error
 * shaped as grpc-js's `ServiceError`.
 */
export interface UnaryTransport {
  /**
   * One unary call: resolves with the response message's bytes (without the 5-byte prefix, a
   * Buffer of its own per call); rejects with an Error as grpc-js's `ServiceError`: `code`,
   * `details`, `metadata` (the trailers, or the trailers-only headers), message
   * `<code> <NAME>: <details>`. Never throws.
   */
  call(path: string, request: Uint8Array, metadata: Metadata, options: UnaryCallOptions): Promise<Buffer>;
  /**
   * The state of the transport as a whole, as a gRPC channel's: READY while some connection is,
   * CONNECTING while one is being made or the name is being resolved, TRANSIENT_FAILURE while
   * every address is failing.
   * `tryToConnect`: start connecting now, if idle.
   */
  state(tryToConnect?: boolean): TransportState;
  /** Connections by state, for a gauge. */
  connections(): Readonly<Record<ConnectionState, number>>;
  /** The TLS files in force (their expiry, for metrics), or undefined without TLS. */
  certificates(): Certificates | undefined;
  /** No new call (they fail UNAVAILABLE); calls under way finish; connections then close. */
  close(): void;
}

/**
 * Pings every 10 s, dead after 5 s unanswered: a connection whose peer vanished without closing
 * it (a node lost, a network partition) would otherwise stay ready, and calls would go on being
 * sent to it, each waiting out its deadline, until TCP gave up many minutes later. The pet service
 * (grpc-js) sets no minimum ping interval, so pings without calls are allowed.
 */
export const DEFAULT_KEEPALIVE: KeepaliveOptions = { timeMs: 10_000, timeoutMs: 5_000 };

/** gRPC's default largest message, 4 MiB. */
export const DEFAULT_MAX_RECEIVE_MESSAGE_BYTES = 4 * 1024 * 1024;

/** grpc-js's default shortest time between two resolutions of a name. */
export const DEFAULT_MIN_RESOLUTION_INTERVAL_MS = 30_000;

/** A name is resolved again this often, whatever happens: replicas added are found without waiting for a connection to go away. */
export const DEFAULT_RESOLUTION_REFRESH_MS = 30_000;

const USER_AGENT = 'grpc-node-petstore/1';

/**
 * A unary gRPC transport on node:http2 for `target` (`host:port`, `dns:///name:port`, `[::1]:port`,
 * `ipv4:`, `ipv6:`, `unix:`; grpc/grpc naming.md): one HTTP/2 connection per address (every A and
 * AAAA record of a name), calls spread round robin over the ready ones, reconnected with gRPC's
 * connection backoff, keepalive pings, deadlines, cancellation, a stream the server refused sent
 * again, and statuses read as gRPC's HTTP/2 protocol says. Connects on the first call (or on
 * `state(true)`).
 *
 * @throws InvalidTargetError for a target that is none; RangeError for an option out of range;
 * CertificateFilesError for TLS files that cannot be used.
 */
export function createUnaryTransport(target: string, options: UnaryTransportOptions = {}): UnaryTransport {
  const parsed = parseTarget(target);
  const maxReceive = options.maxReceiveMessageBytes ?? DEFAULT_MAX_RECEIVE_MESSAGE_BYTES;
  if (!(Number.isInteger(maxReceive) && maxReceive >= 0)) throw new RangeError(`maxReceiveMessageBytes: must be a whole number of bytes, not ${maxReceive}`);
  const backoff = checkBackoff({ ...GRPC_CONNECTION_BACKOFF, ...options.backoff });
  const keepalive = options.keepalive ?? DEFAULT_KEEPALIVE;
  if (keepalive !== false && !(keepalive.timeMs > 0 && keepalive.timeoutMs > 0)) {
    throw new RangeError(`keepalive: timeMs and timeoutMs must be positive numbers of milliseconds, not ${keepalive.timeMs} and ${keepalive.timeoutMs}`);
  }
  const resolution = {
    minIntervalMs: nonNegative('minResolutionIntervalMs', options.minResolutionIntervalMs ?? DEFAULT_MIN_RESOLUTION_INTERVAL_MS),
    refreshIntervalMs: nonNegative('resolutionRefreshMs', options.resolutionRefreshMs ?? DEFAULT_RESOLUTION_REFRESH_MS),
  };
  const lookup = options.lookup ?? (parsed.kind === 'dns' && parsed.dnsServer !== undefined ? lookupAt(parsed.dnsServer) : systemLookup);
  const proxy = proxyOf(target, options.proxy);
  const certificates = tlsFiles(options.tls, options.serverNameOverride);
  const settings: ConnectionSettings = {
    tls: certificates === undefined ? undefined : { certificates, ...identityOf(parsed, options.serverNameOverride) },
    proxy: proxy === undefined ? undefined : { destination: parsed.authority, credentials: proxy.credentials },
    keepalive,
  };
  const source: AddressSource = addressSource(proxy === undefined ? parsed : proxyTarget(proxy), lookup, resolution);
  const pool = new ConnectionPool(source, settings, backoff);
  const scheme = certificates === undefined ? 'http' : 'https';
  const authority = parsed.authority;
  const userAgent = options.userAgent ?? USER_AGENT;
  return {
    call(path, request, metadata, callOptions) {
      return new Promise<Buffer>((resolve, reject) => {
        if (pool.state === 'SHUTDOWN') {
          reject(callError(Status.UNAVAILABLE, 'the transport is closed'));
          return;
        }
        const { deadline, signal } = callOptions;
        if (signal?.aborted === true) {
          reject(cancelledError());
          return;
        }
        if (!(deadline > Date.now())) {
          reject(callError(Status.DEADLINE_EXCEEDED, 'Deadline exceeded'));
          return;
        }
        const headers: OutgoingHttpHeaders = metadata.toHttp2Headers();
        headers[':method'] = 'POST';
        headers[':scheme'] = scheme;
        headers[':path'] = path;
        headers[':authority'] = authority;
        headers['content-type'] = 'application/grpc';
        headers.te = 'trailers';
        headers['user-agent'] = userAgent;
        headers['grpc-accept-encoding'] = ACCEPT_ENCODING;
        pool.dispatch(new UnaryCall(pool, headers, framed(request), callOptions, maxReceive, resolve, reject as (error: ServiceError) => void));
      });
    },
    state(tryToConnect = false) {
      if (tryToConnect) pool.exitIdle();
      return pool.state;
    },
    connections: () => pool.connections(),
    certificates: () => certificates?.current,
    close() {
      pool.close();
      certificates?.close();
    },
  };
}

/** The encodings a response may use: those node:zlib decodes. */
const ACCEPT_ENCODING = 'identity,deflate,gzip';

/** `message` with gRPC's 5-byte prefix: uncompressed, and its length. */
function framed(message: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(5 + message.length);
  frame[0] = 0;
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
}

function nonNegative(name: string, value: number): number {
  if (!(value >= 0 && Number.isFinite(value))) throw new RangeError(`${name}: must be a number of milliseconds, not ${value}`);
  return value;
}

function tlsFiles(tls: CertificateFilesOptions | undefined, serverNameOverride: string | undefined): CertificateFiles | undefined {
  if (tls === undefined) {
    if (serverNameOverride !== undefined) throw new RangeError('serverNameOverride: only with tls');
    return undefined;
  }
  if (tls.caFile === undefined) throw new CertificateFilesError('caFile', "required: the CA that the server's certificate is checked against");
  return new CertificateFiles(tls);
}

/** What the server's certificate must hold, and the SNI: the override, else the target's host (an address: no SNI). */
function identityOf(target: Target, serverNameOverride: string | undefined): { identity: string; servername: string | undefined } {
  if (serverNameOverride !== undefined) {
    if (serverNameOverride === '' || isIP(serverNameOverride) !== 0) throw new RangeError(`serverNameOverride: must be a host name, not ${JSON.stringify(serverNameOverride)}`);
    return { identity: serverNameOverride, servername: serverNameOverride };
  }
  const host = splitHostPort(target.authority)?.host ?? 'localhost';
  return { identity: host, servername: isIP(host) === 0 ? host : undefined };
}

/** The proxy connections go through, if any: the option, else the environment's (a value that cannot be used ignored). */
function proxyOf(target: string, option: string | ProxySettings | false | undefined): ProxySettings | undefined {
  if (option === false) return undefined;
  if (typeof option === 'object') return option;
  if (option !== undefined) return parseProxyOption(option);
  return proxyFromEnvironment(target);
}

/** The proxy's own address as a target: a name is resolved like the target's would be. */
function proxyTarget(proxy: ProxySettings): Target {
  try {
    return parseTarget(proxy.address);
  } catch (error) {
    throw new RangeError(`proxy: ${(error as InvalidTargetError).message}`, { cause: error });
  }
}

function addressSource(target: Target, lookup: Lookup, resolution: { minIntervalMs: number; refreshIntervalMs: number }): AddressSource {
  return target.kind === 'static' ? { kind: 'static', addresses: target.addresses } : { kind: 'dns', host: target.host, port: target.port, lookup, resolution };
}
