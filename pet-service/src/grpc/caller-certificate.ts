import type { PeerCertificate } from 'node:tls';
import type { ServerUnaryCall } from '@grpc/grpc-js';
import type { Span } from '@opentelemetry/api';

type Call = Pick<ServerUnaryCall<unknown, unknown>, 'getAuthContext'>;

/** Who called, by the client certificate it presented (mutual TLS); absent on plaintext. */
export interface CallerCertificate {
  /** The subject's distinguished name, `CN=gateway, O=petstore`. */
  readonly subject: string;
  /** Its subject alternative names as OpenSSL prints them (`DNS:gateway, URI:spiffe://…`), if any. */
  readonly san?: string;
}

/**
 * OpenTelemetry's `tls.client.subject`; its constant is in the incubating entry point, which
 * OpenTelemetry asks users to copy from rather than import.
 */
export const ATTR_TLS_CLIENT_SUBJECT = 'tls.client.subject';
/** The span attribute of {@link CallerCertificate.san}; OpenTelemetry defines none. */
export const ATTR_TLS_CLIENT_SAN = 'petstore.tls.client.subject_alt_name';

/**
 * The certificate the caller's connection was verified with, or undefined without one. Read on
 * demand (each read decodes the certificate), so only calls that are logged or traced pay.
 */
export function callerCertificate(call: Call): CallerCertificate | undefined {
  const certificate = call.getAuthContext().sslPeerCertificate;
  if (certificate === undefined) return undefined;
  const subject = distinguishedName(certificate);
  return certificate.subjectaltname === undefined ? { subject } : { subject, san: certificate.subjectaltname };
}

/** The call log line's fields for the caller's certificate (none without one). */
export function callerFields(call: Call): { peerSubject?: string; peerSan?: string } {
  const caller = callerCertificate(call);
  if (caller === undefined) return {};
  return caller.san === undefined ? { peerSubject: caller.subject } : { peerSubject: caller.subject, peerSan: caller.san };
}

/** Puts the caller's certificate on the call's span (`tls.client.subject`, and its SAN). */
export function recordCaller(span: Span, call: Call): void {
  const caller = callerCertificate(call);
  if (caller === undefined) return;
  span.setAttribute(ATTR_TLS_CLIENT_SUBJECT, caller.subject);
  if (caller.san !== undefined) span.setAttribute(ATTR_TLS_CLIENT_SAN, caller.san);
}

function distinguishedName(certificate: PeerCertificate): string {
  return Object.entries(certificate.subject ?? {})
    .flatMap(([name, value]) => (Array.isArray(value) ? value : [value]).map((part) => `${name}=${String(part)}`))
    .join(', ');
}
