import type { IncomingHttpHeaders } from 'node:http';

// RFC 9110 section 7.6.1, with Keep-Alive, Proxy-Connection and the other Proxy-* fields of RFC
// 2616's list. Transfer-Encoding describes one hop's framing: Node frames each hop itself.
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

/**
 * Whether a header (lower case) belongs to one connection and must not be forwarded: the fixed
 * hop-by-hop fields, every `Proxy-*` field, and every field the message's `Connection` names.
 * http-proxy copies them all in both directions (https://github.com/http-party/node-http-proxy/issues/1488,
 * https://github.com/http-party/node-http-proxy/issues/446).
 */
export function isHopByHop(name: string, connectionOptions: ReadonlySet<string>): boolean {
  return HOP_BY_HOP.has(name) || name.startsWith('proxy-') || connectionOptions.has(name);
}

const NONE: ReadonlySet<string> = new Set();

/** The field names a message's `Connection` header lists, lower case. */
export function connectionOptions(headers: IncomingHttpHeaders): ReadonlySet<string> {
  const value = headers.connection;
  if (value === undefined || value === '') return NONE;
  return new Set(value.split(',').map((option) => option.trim().toLowerCase()));
}
