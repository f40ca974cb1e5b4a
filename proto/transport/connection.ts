import { type ClientHttp2Session, type ClientHttp2Stream, connect as connectHttp2, constants, type OutgoingHttpHeaders } from 'node:http2';
import { connect as connectTcp, isIP, type Socket } from 'node:net';
import { checkServerIdentity, connect as connectTls, createSecureContext, type PeerCertificate, type SecureContext } from 'node:tls';
import type { CertificateFiles, Certificates } from '../certificate-files';
import { describe } from './call-error';
import { connectThroughProxy } from './http-connect-proxy';
import { http2CodeName } from './status-mapping';
import type { SocketAddress } from './target';

/** HTTP/2 keepalive pings of a connection (gRFC A8). */
export interface KeepaliveOptions {
  /** Time between pings. */
  readonly timeMs: number;
  /** How long a ping may go unanswered before the connection is closed as dead. */
  readonly timeoutMs: number;
}

/** TLS of every connection: the files in force when it is made, and the server identity it must prove. */
export interface ConnectionTls {
  readonly certificates: CertificateFiles;
  /** The name or IP address the server's certificate must hold. */
  readonly identity: string;
  /** Sent as SNI: a name, never an IP address (RFC 6066 section 3); undefined for an address. */
  readonly servername: string | undefined;
}

/** What every connection of one transport shares. */
export interface ConnectionSettings {
  readonly tls: ConnectionTls | undefined;
  /** Through an HTTP CONNECT proxy: the `host:port` to ask it for, and its credentials. */
  readonly proxy: { readonly destination: string; readonly credentials: string | undefined } | undefined;
  /** Mutable: doubled for later connections when a server says the pings came too often. */
  keepalive: KeepaliveOptions | false;
}

/** What a connection tells its owner, each at most once and in this order. */
export interface ConnectionOwner {
  /** The HTTP/2 session is up (the server's SETTINGS arrived): streams may start. */
  ready(connection: Connection): void;
  /** The attempt failed before the connection was ready: `reason` says why. */
  failed(connection: Connection, reason: string): void;
  /**
   * The ready connection takes no new streams: the server sent GOAWAY (`reason` undefined: its
   * streams finish), or the connection was lost (`reason` says why; its streams fail).
   */
  lost(connection: Connection, reason: string | undefined): void;
  /** The socket is closed and no stream is left. */
  closed(connection: Connection): void;
}

const { NGHTTP2_NO_ERROR, NGHTTP2_ENHANCE_YOUR_CALM } = constants;

/**
 * By default Node refuses new streams once a session's buffered data passes 10 MB, and its streams
 * then fail as ENHANCE_YOUR_CALM; a few large answers in flight reach that. grpc-js disables the
 * check the same way.
 */
const MAX_SESSION_MEMORY_MB = Number.MAX_SAFE_INTEGER;

/**
 * One HTTP/2 connection to one address, from the first TCP byte to the socket's close: the
 * connection itself (TCP, an HTTP CONNECT tunnel, TLS with the certificate files in force, the
 * HTTP/2 handshake) within `deadline`, keepalive pings while it is up, and GOAWAY. Streams start
 * on it through {@link request} while it is ready; the owner counts them with {@link streamEnded}
 * and is told of each change of state.
 */
export class Connection {
  session: ClientHttp2Session | undefined;
  /** Set once the connection takes no new stream (GOAWAY, loss, or {@link drain}). */
  draining = false;
  /** The last stream id a GOAWAY said the server will process; streams above it were never seen. */
  goawayLastStreamId = Number.POSITIVE_INFINITY;
  /** Why the connection was lost (its open streams failed), once it was. */
  private lostReason: string | undefined;
  private streams = 0;
  private phase: 'connecting' | 'ready' | 'gone' = 'connecting';
  private readonly attempt = new AbortController();
  private readonly connectTimer: NodeJS.Timeout;
  private keepaliveTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  private socketClosed = false;
  private closeReported = false;
  private lastError: string | undefined;

  constructor(
    /** Where the socket goes: the address, or the proxy's. */
    readonly address: SocketAddress,
    private readonly settings: ConnectionSettings,
    private readonly owner: ConnectionOwner,
    deadline: number,
  ) {
    const timeoutMs = Math.max(0, deadline - Date.now());
    this.connectTimer = setTimeout(() => this.fail(`connect timed out after ${timeoutMs} ms`), timeoutMs);
    this.connectTimer.unref();
    void this.open();
  }

  /** Streams open on this connection. */
  get activeStreams(): number {
    return this.streams;
  }

  /**
   * Why the connection can no longer carry its streams, if it cannot: lost, or its session
   * destroyed (which Node may report to the streams before the session's own close event).
   */
  lossReason(): string | undefined {
    if (this.lostReason !== undefined) return this.lostReason;
    return this.session?.destroyed === true ? (this.lastError ?? 'the connection closed') : undefined;
  }

  /**
   * Starts a stream. @throws when the session refuses it (closed or destroyed under the owner's
   * feet, or headers Node will not send): then the stream never existed.
   */
  request(headers: OutgoingHttpHeaders): ClientHttp2Stream {
    const session = this.session!;
    let stream: ClientHttp2Stream;
    try {
      stream = session.request(headers, REQUEST_OPTIONS);
    } catch (error) {
      if (session.destroyed) this.lose(describe(error));
      else if (session.closed) this.stopNewStreams(undefined);
      throw error;
    }
    if (this.streams++ === 0) session.ref();
    return stream;
  }

  /** A stream started by {@link request} has closed. */
  streamEnded(): void {
    this.streams -= 1;
    if (this.streams === 0) {
      if (this.session !== undefined && !this.session.destroyed) this.session.unref();
      this.maybeClosed();
    }
  }

  /**
   * No new streams: those open finish, then the connection closes (an address gone from the name,
   * or the transport closed). A connection still connecting is abandoned.
   */
  drain(): void {
    if (this.phase === 'connecting') {
      this.fail('the connection is no longer wanted');
      return;
    }
    this.draining = true;
    this.stopKeepalive();
    const { session } = this;
    if (session !== undefined && !session.closed && !session.destroyed) session.close();
    this.maybeClosed();
  }

  /** Closes the connection now, its streams failing UNAVAILABLE with `reason`. */
  destroy(reason: string): void {
    this.lose(reason);
    this.session?.destroy();
  }

  private async open(): Promise<void> {
    let socket: Socket;
    try {
      socket = await this.socket();
      if (this.settings.tls !== undefined) socket = await secure(socket, this.settings.tls, this.attempt.signal);
    } catch (error) {
      this.fail(describe(error));
      return;
    }
    if (this.phase !== 'connecting') {
      socket.destroy();
      return;
    }
    this.startSession(socket);
  }

  /** A TCP (or Unix) socket to the address, or a tunnel through the proxy to the destination. */
  private socket(): Promise<Socket> {
    const { proxy } = this.settings;
    if (proxy !== undefined) return connectThroughProxy(this.address, proxy.destination, proxy.credentials, this.attempt.signal);
    return new Promise((resolve, reject) => {
      const where = 'path' in this.address ? { path: this.address.path } : { host: this.address.host, port: this.address.port };
      const socket = connectTcp({ ...where, noDelay: true, signal: this.attempt.signal }, () => {
        socket.off('error', reject);
        resolve(socket);
      });
      socket.once('error', reject);
    });
  }

  private startSession(socket: Socket): void {
    socket.once('close', () => {
      this.socketClosed = true;
      this.maybeClosed();
    });
    // Node ends the socket of a session that is over (GOAWAY, close()) and leaves it open until the
    // server closes its side, which a server that sent GOAWAY need not do: it is closed from here.
    socket.once('finish', () => socket.destroy());
    // The streams' `:authority` is set per request: this URL only names the scheme.
    const session = connectHttp2(this.settings.tls === undefined ? 'http://localhost' : 'https://localhost', {
      createConnection: () => socket,
      settings: { enablePush: false },
      maxSessionMemory: MAX_SESSION_MEMORY_MB,
    });
    this.session = session;
    session.unref();
    session.on('error', (error) => {
      this.lastError = describe(error);
    });
    // A frame Node could not send (the session is going away): the streams report it themselves.
    session.on('frameError', () => undefined);
    session.once('remoteSettings', () => this.becomeReady());
    session.on('goaway', (code: number, lastStreamId: number, data: Buffer | undefined) => this.goaway(code, lastStreamId, data));
    session.once('close', () => {
      this.lose(this.lastError ?? 'the connection closed');
      this.maybeClosed();
    });
  }

  private becomeReady(): void {
    if (this.phase !== 'connecting') return;
    this.phase = 'ready';
    clearTimeout(this.connectTimer);
    this.startKeepalive();
    this.owner.ready(this);
  }

  private goaway(code: number, lastStreamId: number, data: Buffer | undefined): void {
    if (lastStreamId >= 0) this.goawayLastStreamId = Math.min(this.goawayLastStreamId, lastStreamId);
    const debug = data !== undefined && data.length > 0 ? data.toString('latin1') : undefined;
    // gRFC A8: a server that found the pings too frequent says so; ping half as often from now on.
    const { keepalive } = this.settings;
    if (code === NGHTTP2_ENHANCE_YOUR_CALM && debug === 'too_many_pings' && keepalive !== false) {
      this.settings.keepalive = { timeMs: keepalive.timeMs * 2, timeoutMs: keepalive.timeoutMs };
    }
    // With NO_ERROR the streams the server took finish (Node closes the session gracefully); with an
    // error Node destroys the session, and they are lost.
    if (code === NGHTTP2_NO_ERROR) this.stopNewStreams(undefined);
    else this.lose(`the server sent GOAWAY ${http2CodeName(code)}${debug === undefined ? '' : ` (${debug})`}`);
  }

  /** Takes no new stream from now on; tells the owner once. `reason`: the connection was lost. */
  private stopNewStreams(reason: string | undefined): void {
    if (this.phase === 'connecting') {
      this.fail(reason ?? 'the server sent GOAWAY during the handshake');
      return;
    }
    const told = this.draining;
    this.draining = true;
    this.stopKeepalive();
    if (!told && this.phase === 'ready') this.owner.lost(this, reason);
  }

  /** The connection can no longer carry its streams: they fail with `reason`. */
  private lose(reason: string): void {
    this.lostReason ??= reason;
    this.stopNewStreams(reason);
    if (this.phase === 'ready') this.phase = 'gone';
  }

  private fail(reason: string): void {
    if (this.phase !== 'connecting') return;
    this.phase = 'gone';
    this.draining = true;
    clearTimeout(this.connectTimer);
    this.attempt.abort();
    this.session?.destroy();
    this.owner.failed(this, reason);
    this.maybeClosed();
  }

  private maybeClosed(): void {
    if (this.closeReported || this.phase === 'connecting' || this.streams > 0) return;
    if (this.session !== undefined && !this.socketClosed && !this.session.destroyed) return;
    // A session that nghttp2 tore down (a header block or frame over a limit) closes its streams
    // before its own close event: the owner hears of the loss before the close, as it is promised.
    this.lose(this.lastError ?? 'the connection closed');
    this.closeReported = true;
    this.owner.closed(this);
  }

  private startKeepalive(): void {
    const { keepalive } = this.settings;
    if (keepalive === false || this.draining) return;
    this.keepaliveTimer = setTimeout(() => this.ping(), keepalive.timeMs);
    this.keepaliveTimer.unref();
  }

  private ping(): void {
    const { keepalive } = this.settings;
    const { session } = this;
    if (keepalive === false || session === undefined || this.draining) return;
    this.pingTimer = setTimeout(() => this.destroy(`keepalive ping unanswered for ${keepalive.timeoutMs} ms`), keepalive.timeoutMs);
    this.pingTimer.unref();
    let sent: boolean;
    try {
      sent = session.ping((error) => {
        clearTimeout(this.pingTimer);
        this.pingTimer = undefined;
        if (error === null) this.startKeepalive();
      });
    } catch {
      sent = false;
    }
    // Not sent (Node's limit of unanswered pings, or the session closing, whose close is reported
    // as it comes): no timeout for it, and the next ping at the usual time.
    if (!sent) {
      clearTimeout(this.pingTimer);
      this.pingTimer = undefined;
      this.startKeepalive();
    }
  }

  private stopKeepalive(): void {
    clearTimeout(this.keepaliveTimer);
    clearTimeout(this.pingTimer);
    this.keepaliveTimer = undefined;
    this.pingTimer = undefined;
  }
}

const REQUEST_OPTIONS = { endStream: false };

/** TLS over `socket`: the files in force, ALPN h2, SNI for a name only, the identity checked. */
function secure(socket: Socket, tls: ConnectionTls, signal: AbortSignal): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const secureContext = secureContextOf(tls.certificates.current);
    const secured = connectTls(
      {
        socket,
        host: tls.identity,
        ...(tls.servername === undefined ? {} : { servername: tls.servername }),
        secureContext,
        ALPNProtocols: ['h2'],
        checkServerIdentity: (_host, certificate) => explainedServerIdentity(tls.identity, certificate),
      },
      () => {
        secured.off('error', failed).off('close', closed);
        signal.removeEventListener('abort', aborted);
        if (!secured.authorized) {
          secured.destroy();
          reject(secured.authorizationError);
        } else if (secured.alpnProtocol !== false && secured.alpnProtocol !== 'h2') {
          secured.destroy();
          reject(new Error(`the server chose ${secured.alpnProtocol} over TLS (ALPN), not h2`));
        } else {
          resolve(secured);
        }
      },
    );
    const failed = (error: Error): void => {
      signal.removeEventListener('abort', aborted);
      reject(error);
    };
    const closed = (): void => failed(new Error('the connection closed during the TLS handshake'));
    const aborted = (): void => {
      secured.destroy();
      failed(new Error('TLS handshake abandoned'));
    };
    secured.once('error', failed).once('close', closed);
    signal.addEventListener('abort', aborted, { once: true });
  });
}

/** One secure context per set of files put in force, made when first needed. */
const secureContexts = new WeakMap<Certificates, SecureContext>();

function secureContextOf(certificates: Certificates): SecureContext {
  let context = secureContexts.get(certificates);
  if (context === undefined) {
    const { ca, cert, key } = certificates;
    context = createSecureContext({ ca, cert, key });
    secureContexts.set(certificates, context);
  }
  return context;
}

/**
 * `tls.checkServerIdentity`, its refusal saying what the certificate holds: Node's lists only the
 * SANs of the kind sought (none at all for an address against a certificate of names).
 */
export function explainedServerIdentity(host: string, cert: PeerCertificate): Error | undefined {
  const error = checkServerIdentity(host, cert);
  if (error !== undefined) {
    error.message = `the server's certificate does not hold ${isIP(host) === 0 ? 'the name' : 'the IP address'} ${host} (its subject alternative names: ${cert.subjectaltname || 'none'})`;
  }
  return error;
}
