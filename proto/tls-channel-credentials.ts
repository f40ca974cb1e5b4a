import { isIP, type Socket } from 'node:net';
import { checkServerIdentity, connect, createSecureContext, type PeerCertificate } from 'node:tls';
import { CallCredentials, type ChannelOptions, ChannelCredentials, experimental } from '@grpc/grpc-js';
import type { CertificateFiles, Certificates } from './certificate-files';

/**
 * Channel credentials for TLS with `certificates` (the CA that the server's certificate must
 * chain to, and this client's certificate, if any), whatever the target names the server by:
 *
 * - a name (`pet-service:50051`, `dns:///pet-service.petstore.svc:50051`): grpc-js's own
 *   certificate-provider credentials, which send the name as SNI and check it against the
 *   certificate's DNS SANs;
 * - an IP address (`127.0.0.1:50051`, `dns:///10.0.0.7:50051`, `[::1]:50051`, `ipv4:` and `ipv6:`
 *   targets): no SNI, which carries names only (RFC 6066 section 3), and the address checked
 *   against the certificate's IP SANs by `tls.checkServerIdentity`.
 *
 * grpc-js alone never connects to an address: it passes the target's host to `tls.connect` as
 * `servername` whatever it is, and Node refuses an address there (ERR_INVALID_ARG_VALUE;
 * grpc/grpc-node#1919, docs/decisions.md). `grpc.ssl_target_name_override` still rules where it
 * is set: grpc-js then sends and checks that name.
 *
 * A refusal names the host and the certificate's subject alternative names.
 */
export function createTlsChannelCredentials(certificates: CertificateFiles): ChannelCredentials {
  const byName = experimental.createCertificateProviderChannelCredentials(certificates, certificates.current.cert === undefined ? null : certificates, {
    checkServerIdentity: explainedServerIdentity,
  });
  return new TlsChannelCredentials(certificates, byName);
}

class TlsChannelCredentials extends ChannelCredentials {
  constructor(
    private readonly certificates: CertificateFiles,
    private readonly byName: ChannelCredentials,
  ) {
    super();
  }

  _isSecure(): boolean {
    return true;
  }

  _equals(other: ChannelCredentials): boolean {
    return other === this || (other instanceof TlsChannelCredentials && this.byName._equals(other.byName));
  }

  _createSecureConnector(target: experimental.GrpcUri, options: ChannelOptions, callCredentials = CallCredentials.createEmpty()): experimental.SecureConnector {
    const address = options['grpc.ssl_target_name_override'] ? undefined : addressOf(target, options);
    if (address === undefined) return this.byName._createSecureConnector(target, options, callCredentials);
    return {
      connect: (socket) => connectToAddress(socket, address, this.certificates.current),
      waitForReady: () => Promise.resolve(),
      getCallCredentials: () => callCredentials,
      destroy: () => undefined,
    };
  }
}

/**
 * The IP address the target's authority names, as grpc-js derives the TLS host from it (through
 * the proxy's `grpc.http_connect_target` where one is in use), or undefined for a name.
 */
function addressOf(target: experimental.GrpcUri, options: ChannelOptions): string | undefined {
  const proxied = options['grpc.http_connect_target'];
  const parsed = typeof proxied === 'string' ? URI.exec(proxied) : null;
  const real = parsed === null ? target : { scheme: parsed[1], path: parsed[2]! };
  if (real.scheme !== undefined && !ADDRESS_SCHEMES.has(real.scheme)) return undefined;
  // An ipv4:/ipv6: target lists addresses; grpc-js takes the first as the authority.
  const authority = real.scheme === 'dns' || real.scheme === undefined ? real.path : (real.path.split(',')[0] ?? '');
  const host = experimental.splitHostPort(authority)?.host ?? authority;
  return isIP(host) === 0 ? undefined : host;
}

/** grpc-js's reading of a target: `scheme:`, `//authority/`, path. */
const URI = /^(?:([A-Za-z0-9+.-]+):)?(?:\/\/[^/]*\/)?(.+)$/;

/** Schemes whose path is `host:port` (dns) or a list of addresses (ipv4, ipv6); unix sockets have no host. */
const ADDRESS_SCHEMES = new Set(['dns', 'ipv4', 'ipv6']);

function connectToAddress(socket: Socket, address: string, certificates: Certificates): Promise<experimental.SecureConnectResult> {
  return new Promise((resolve, reject) => {
    const { ca, cert, key } = certificates;
    const secureContext = createSecureContext({ ca, cert, key });
    // No `servername`, so no SNI; Node checks the server's identity against `host`.
    const tlsSocket = connect({ socket, host: address, secureContext, ALPNProtocols: ['h2'], checkServerIdentity: explainedServerIdentity }, () => {
      tlsSocket.off('close', closed).off('error', reject);
      if (tlsSocket.authorized) resolve({ socket: tlsSocket, secure: true });
      else reject(tlsSocket.authorizationError);
    });
    const closed = (): void => reject(new Error('Socket closed'));
    tlsSocket.once('close', closed).once('error', reject);
  });
}

/**
 * `tls.checkServerIdentity`, its refusal saying what the certificate holds: Node's lists only the
 * SANs of the kind sought (none at all for an address against a certificate of names).
 */
function explainedServerIdentity(host: string, cert: PeerCertificate): Error | undefined {
  const error = checkServerIdentity(host, cert);
  if (error !== undefined) {
    error.message = `the server's certificate does not hold ${isIP(host) === 0 ? 'the name' : 'the IP address'} ${host} (its subject alternative names: ${cert.subjectaltname || 'none'})`;
  }
  return error;
}
