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
export async function sendRaw(port: number, request: Buffer): Promise<RawReply> {
  return parseReply(await exchange(port, request));
}

/** Every byte the server sent on a connection that carried `request`, once the server closed it. */
function exchange(port: number, request: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect(port, '127.0.0.1', () => socket.write(request));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks)));
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

/**
 * Like {@link sendRaw}, but resolves with every reply on the connection, in order: each reply's
 * body is framed by its Content-Length (every reply of the gateway's has one), and what follows
 * the last whole reply is kept as `rest`. Interim replies (`100 Continue`) are skipped.
 */
export async function sendRawPipelined(port: number, request: Buffer): Promise<{ replies: RawReply[]; rest: Buffer }> {
  return parseReplies(await exchange(port, request));
}

function parseReplies(raw: Buffer): { replies: RawReply[]; rest: Buffer } {
  const replies: RawReply[] = [];
  let rest = raw;
  for (;;) {
    const split = rest.indexOf('\r\n\r\n');
    if (split < 0) break;
    const head = rest.subarray(0, split).toString('latin1').split('\r\n');
    const status = Number(head[0]?.split(' ')[1]);
    const headers = Object.fromEntries(
      head.slice(1).map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
    );
    const length = status >= 100 && status < 200 ? 0 : Number(headers['content-length']);
    if (!Number.isInteger(length) || rest.length < split + 4 + length) break;
    if (status >= 200) replies.push({ status, headers, body: rest.subarray(split + 4, split + 4 + length) });
    rest = rest.subarray(split + 4 + length);
  }
  return { replies, rest };
}
