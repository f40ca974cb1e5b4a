import { connect } from 'node:net';

export interface RawReply {
  status: number;
  /** Lower-case names; a repeated field keeps its last value. */
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * Sends bytes as they are (nothing a client library would refuse) and reads until the server
 * closes (so send `Connection: close`, or a request the server closes after). The client never
 * half-closes first: to an HTTP server that is an aborted request. Resolves with the final reply.
 */
export function sendRaw(port: number, request: Buffer): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect(port, '127.0.0.1', () => socket.write(request));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(parseReply(Buffer.concat(chunks))));
  });
}

/** The final reply in `raw`: an interim one (`100 Continue`) is skipped. */
function parseReply(raw: Buffer): RawReply {
  const split = raw.indexOf('\r\n\r\n');
  const head = raw.subarray(0, split).toString('latin1').split('\r\n');
  const status = Number(head[0]?.split(' ')[1]);
  if (status >= 100 && status < 200) return parseReply(raw.subarray(split + 4));
  const headers = Object.fromEntries(
    head.slice(1).map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
  );
  return { status, headers, body: raw.subarray(split + 4) };
}
