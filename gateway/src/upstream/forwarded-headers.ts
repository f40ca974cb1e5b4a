import type { Request } from 'express';
import proxyAddr from 'proxy-addr';
import type { ApiKey } from '../keys/api-keys';
import { connectionOptions, isHopByHop } from './hop-by-hop';

// The client's credential stays at the edge. Expect was answered here (Node sends the 100), and
// http-proxy emits no `proxyReq` event for a request that carries it. The forwarding fields are
// replaced below, and these two would still carry what the client claimed.
const NOT_FORWARDED = new Set(['authorization', 'expect', 'forwarded', 'x-forwarded-port']);

/**
 * Rewrites a request's headers, in place, into those its upstream receives: without
 * `Authorization` or any hop-by-hop field; with the caller's `X-Api-Key-Id` and `X-Plan`, the
 * gateway's `X-Request-Id`, and `X-Forwarded-For`, `-Proto` and `-Host` as express reads them
 * under `trust proxy` (TRUST_PROXY): the addresses it believes, client first, and nothing a client
 * could forge past an untrusted hop. A body of unknown length goes on chunked, framed by Node.
 *
 * In place, because http-proxy copies `request.headers` when it opens the upstream request;
 * changing that request in its `proxyReq` event instead throws once a body chunk has made Node
 * write the head. Its `xfwd` option appends to whatever X-Forwarded-For the client sent.
 */
export function forwardHeaders(request: Request, caller: ApiKey, requestId: string): void {
  const { headers } = request;
  const trust = request.app.get('trust proxy fn') as (address: string, hop: number) => boolean;
  const forwardedFor = proxyAddr.all(request, trust).reverse().join(', ');
  const { protocol, host } = request;
  const chunked = headers['transfer-encoding'] !== undefined;
  const connection = connectionOptions(headers);
  for (const name of Object.keys(headers)) {
    if (isHopByHop(name, connection) || NOT_FORWARDED.has(name)) delete headers[name];
  }
  if (chunked) headers['transfer-encoding'] = 'chunked';
  headers['x-api-key-id'] = caller.id;
  headers['x-plan'] = caller.plan;
  headers['x-request-id'] = requestId;
  headers['x-forwarded-for'] = forwardedFor;
  headers['x-forwarded-proto'] = protocol;
  if (host === undefined) delete headers['x-forwarded-host'];
  else headers['x-forwarded-host'] = host;
}
