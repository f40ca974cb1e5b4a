/**
 * The pet service's TLS listener: it terminates TLS (verifying client certificates against a CA
 * when given one) and hands each established connection to the gRPC server through grpc-js's
 * connection injector. grpc-js's own secure port creates its TLS server inside `bindAsync` and
 * exposes neither it nor its `tlsClientError` event, so a refused handshake could not be told to
 * anyone; owning the listener is what lets it be logged, once per peer and reason, and counted
 * (docs/decisions.md, "TLS on the pet service").
 */
import type { AddressInfo } from 'node:net';
import { createServer as createTlsServer, type SecureContextOptions, type TLSSocket } from 'node:tls';
import { type Server, ServerCredentials } from '@grpc/grpc-js';
import type { CertificateFiles, Certificates } from '@petstore/proto';
import { createReportThrottle } from '@petstore/runtime';
import type { Logger } from 'pino';

/** What {@link listenTls} needs. */
export interface TlsListenerOptions {
  readonly host: string;
  /** 0 picks a free port (tests). */
  readonly port: number;
  /** The server's certificate and key, and the CA that callers' certificates must chain to. */
  readonly certificates: CertificateFiles;
  /** Whether a caller must present a certificate signed by the CA (mutual TLS). */
  readonly requireClientCertificate: boolean;
  readonly logger: Logger;
  /** Every refused handshake, for the metric. */
  readonly countRefusal?: (reason: string) => void;
  /** A peer's refusals for one reason are logged at most once per this many ms. Default {@link REFUSAL_LOG_INTERVAL_MS}. */
  readonly refusalLogIntervalMs?: number;
  /** Monotonic ms (tests). */
  readonly now?: () => number;
}

export interface TlsListener {
  readonly port: number;
  /** Stops accepting connections; those established stay with the gRPC server, which closes them. */
  close(): void;
}

/**
 * A peer whose handshakes keep failing (a client without a certificate retries every second or
 * so) is logged again after this long, with the count meanwhile: one line per peer and reason,
 * not per attempt, yet a problem that lasts is not forgotten.
 */
export const REFUSAL_LOG_INTERVAL_MS = 10 * 60_000;
/** Peer and reason pairs remembered for that; past this many the one logged longest ago is forgotten. */
const MAX_REMEMBERED_REFUSALS = 10_000;
/** A connection must finish its handshake within this, or it is closed (Node's default is 120 s). */
const HANDSHAKE_TIMEOUT_MS = 10_000;

/** Listens for TLS on `host:port` and serves `server`'s services on every connection it accepts. */
export async function listenTls(server: Server, options: TlsListenerOptions): Promise<TlsListener> {
  const { certificates, requireClientCertificate, logger } = options;
  const injector = server.createConnectionInjector(ServerCredentials.createInsecure());
  const refusals = refusalLog(options);
  const tlsServer = createTlsServer({
    ...contextOptions(certificates.current),
    ALPNProtocols: ['h2'],
    requestCert: requireClientCertificate,
    // Checked below, where the peer's address and the reason are still known: Node's own check
    // destroys the socket after the handshake and reports only "socket hang up", without either.
    rejectUnauthorized: false,
    handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
  });
  certificates.onChange((updated) => {
    tlsServer.setSecureContext(contextOptions(updated));
    logger.info({ subject: updated.subject, notAfter: isoDate(updated.notAfter) }, 'gRPC TLS certificates reloaded; new connections use them');
  });
  tlsServer.on('secureConnection', (socket: TLSSocket) => {
    if (requireClientCertificate && !socket.authorized) {
      const presented = Object.keys(socket.getPeerCertificate()).length > 0;
      refusals(socket.remoteAddress ?? 'unknown', presented ? 'client_certificate_refused' : 'no_client_certificate', String(socket.authorizationError));
      socket.destroy();
      return;
    }
    injector.injectConnection(socket);
  });
  tlsServer.on('tlsClientError', (error: NodeJS.ErrnoException, socket: TLSSocket) =>
    refusals(socket.remoteAddress ?? 'unknown', handshakeFailure(error), error.message.trim()),
  );
  await new Promise<void>((resolve, reject) => {
    tlsServer.once('error', reject);
    tlsServer.listen(options.port, options.host, () => {
      tlsServer.off('error', reject);
      resolve();
    });
  });
  return {
    port: (tlsServer.address() as AddressInfo).port,
    close: () => {
      tlsServer.close();
      certificates.close();
    },
  };
}

function contextOptions(certificates: Certificates): SecureContextOptions {
  return { ca: certificates.ca, cert: certificates.cert, key: certificates.key };
}

function isoDate(ms: number | undefined): string | undefined {
  return ms === undefined ? undefined : new Date(ms).toISOString();
}

/**
 * Logs a peer's refused handshakes once per interval for each reason (with the count since), counts
 * every one. Keyed by reason too: pod addresses are reused, and a new pod refused for another reason
 * than the last one at that address (a missing certificate after a bare TCP probe) is news.
 */
function refusalLog(options: TlsListenerOptions): (peer: string, reason: string, detail: string) => void {
  const pass = createReportThrottle({
    intervalMs: options.refusalLogIntervalMs ?? REFUSAL_LOG_INTERVAL_MS,
    now: options.now ?? (() => performance.now()),
    maxKeys: MAX_REMEMBERED_REFUSALS,
  });
  return (peer, reason, detail) => {
    options.countRefusal?.(reason);
    const occurrences = pass(`${peer} ${reason}`);
    if (occurrences === undefined) return;
    options.logger.warn({ peer, reason, detail, ...(occurrences > 1 ? { refusalsSinceLastLine: occurrences } : {}) }, 'TLS handshake refused');
  };
}

/** A failed handshake's reason, short and bounded for the metric's label. */
function handshakeFailure(error: NodeJS.ErrnoException): string {
  const code = error.code ?? '';
  if (/PEER_DID_NOT_RETURN_A_CERTIFICATE|CERTIFICATE_REQUIRED/.test(code)) return 'no_client_certificate';
  if (/WRONG_VERSION_NUMBER|HTTP_REQUEST|UNKNOWN_PROTOCOL|NO_APPLICATION_PROTOCOL|UNSUPPORTED_PROTOCOL|NO_SHARED_CIPHER/.test(code)) {
    return 'protocol_mismatch';
  }
  if (code === 'ERR_TLS_HANDSHAKE_TIMEOUT') return 'handshake_timeout';
  return 'handshake_incomplete';
}
