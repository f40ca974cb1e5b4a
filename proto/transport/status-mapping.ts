import { isUtf8 } from 'node:buffer';
import { constants } from 'node:http2';
import { status as Status } from '@grpc/grpc-js';

/**
 * The gRPC code of a response that carries no `grpc-status`, by its HTTP status
 * (grpc/grpc doc/http-grpc-status-mapping.md: its table has 431 INTERNAL, as grpc-java maps it,
 * where grpc-go 1.85 and grpc-js 1.14 still say UNKNOWN): such a response did not come from a gRPC
 * server (a proxy's error page, a load balancer's 503).
 */
export function codeOfHttpStatus(httpStatus: number): Status {
  switch (httpStatus) {
    case 400:
    case 431:
      return Status.INTERNAL;
    case 401:
      return Status.UNAUTHENTICATED;
    case 403:
      return Status.PERMISSION_DENIED;
    case 404:
      return Status.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return Status.UNAVAILABLE;
    default:
      return Status.UNKNOWN;
  }
}

/**
 * The gRPC code of a stream the peer reset (RST_STREAM) before any status, by its HTTP/2 error
 * code, as PROTOCOL-HTTP2.md's "Errors" section maps them. REFUSED_STREAM is UNAVAILABLE: the
 * transport sends such a stream again before anyone sees it (nothing of it was processed).
 */
export function codeOfResetStream(http2Code: number): Status {
  switch (http2Code) {
    case constants.NGHTTP2_REFUSED_STREAM:
      return Status.UNAVAILABLE;
    case constants.NGHTTP2_CANCEL:
      return Status.CANCELLED;
    case constants.NGHTTP2_ENHANCE_YOUR_CALM:
      return Status.RESOURCE_EXHAUSTED;
    case constants.NGHTTP2_INADEQUATE_SECURITY:
      return Status.PERMISSION_DENIED;
    default:
      return Status.INTERNAL;
  }
}

/** An HTTP/2 error code's name (`REFUSED_STREAM`), or its number. */
export function http2CodeName(code: number): string {
  return HTTP2_CODE_NAMES.get(code) ?? String(code);
}

/** RFC 9113 section 7's error codes, by number. */
const HTTP2_CODE_NAMES = new Map(
  [
    'NO_ERROR',
    'PROTOCOL_ERROR',
    'INTERNAL_ERROR',
    'FLOW_CONTROL_ERROR',
    'SETTINGS_TIMEOUT',
    'STREAM_CLOSED',
    'FRAME_SIZE_ERROR',
    'REFUSED_STREAM',
    'CANCEL',
    'COMPRESSION_ERROR',
    'CONNECT_ERROR',
    'ENHANCE_YOUR_CALM',
    'INADEQUATE_SECURITY',
    'HTTP_1_1_REQUIRED',
  ].map((name, code) => [code, name] as const),
);

/**
 * A `grpc-message` as sent, percent-decoded (PROTOCOL-HTTP2.md: the message is UTF-8, each byte
 * outside 0x20–0x7E and `%` sent as `%XX`). The bytes are decoded as UTF-8 once every escape is
 * undone, so a character sent as several escapes comes back whole; text that is not valid
 * percent-encoded UTF-8 is kept as received rather than lost, as the protocol asks.
 */
export function decodeGrpcMessage(encoded: string): string {
  if (!encoded.includes('%')) return encoded;
  const bytes = Buffer.allocUnsafe(encoded.length);
  let length = 0;
  for (let index = 0; index < encoded.length; index += 1) {
    const code = encoded.charCodeAt(index);
    if (code === 0x25 && index + 2 < encoded.length && isHex(encoded.charCodeAt(index + 1)) && isHex(encoded.charCodeAt(index + 2))) {
      bytes[length++] = Number.parseInt(encoded.slice(index + 1, index + 3), 16);
      index += 2;
    } else if (code > 0xff) {
      return encoded;
    } else {
      bytes[length++] = code;
    }
  }
  const decoded = bytes.subarray(0, length);
  return isUtf8(decoded) ? decoded.toString('utf8') : encoded;
}

const HEX_ESCAPES = Array.from({ length: 256 }, (_, byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`);

function isHex(code: number): boolean {
  return (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x46) || (code >= 0x61 && code <= 0x66);
}

/** `details` as a `grpc-message` value: UTF-8, each byte outside 0x20–0x7E and `%` as `%XX`. */
export function encodeGrpcMessage(details: string): string {
  let plain = true;
  for (let index = 0; index < details.length; index += 1) {
    const code = details.charCodeAt(index);
    if (code < 0x20 || code > 0x7e || code === 0x25) {
      plain = false;
      break;
    }
  }
  if (plain) return details;
  const bytes = Buffer.from(details, 'utf8');
  let encoded = '';
  for (let index = 0; index < bytes.length; index += 1) {
    const byte = bytes[index]!;
    encoded += byte < 0x20 || byte > 0x7e || byte === 0x25 ? HEX_ESCAPES[byte] : String.fromCharCode(byte);
  }
  return encoded;
}

/**
 * `grpc-timeout` for `ms` milliseconds (PROTOCOL-HTTP2.md: at most 8 digits and a unit): in
 * milliseconds while they fit, else in seconds, minutes or hours, rounded up. Never 0: a deadline
 * that has just passed is sent as 1 ms, and the local timer ends the call.
 */
export function grpcTimeout(ms: number): string {
  const whole = Math.max(1, Math.ceil(ms));
  if (whole < 1e8) return `${whole}m`;
  const seconds = Math.ceil(whole / 1000);
  if (seconds < 1e8) return `${seconds}S`;
  const minutes = Math.ceil(seconds / 60);
  if (minutes < 1e8) return `${minutes}M`;
  return `${Math.min(Math.ceil(minutes / 60), 99_999_999)}H`;
}
