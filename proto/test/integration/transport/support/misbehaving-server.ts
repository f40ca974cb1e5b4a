import { readFileSync } from 'node:fs';
import { createServer, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';

/** The service whose methods name the misbehaviour each call gets: `/misbehaving.Server/<name>`. */
export const MISBEHAVING_SERVICE = 'misbehaving.Server';

/** One call as the server received it. */
export interface ReceivedCall {
  readonly method: string;
  /** 1 for the first call to this method, 2 for the next (a resent one), and so on. */
  readonly attempt: number;
  /** Which connection it came on: 0 for the server's first, in order of arrival. */
  readonly session: number;
  readonly stream: ServerHttp2Stream;
  /** The request's body after the first length prefix: the message, for a well-formed request. */
  readonly request: Buffer;
}

/**
 * What the server does with one call once its request is read. Each answers wrongly in its own way;
 * anything it leaves open stays open, so that only the client can close it.
 */
export type Misbehaviour = (call: ReceivedCall, server: MisbehavingServer) => void;

/** A stream as the server saw it end: how, and on which connection. */
export interface StreamRecord {
  readonly method: string;
  readonly session: number;
  readonly id: number;
  /** The RST_STREAM code it closed with, sent or received (0 when it ended cleanly). */
  rstCode: number | undefined;
  closed: boolean;
}

export interface MisbehavingServer {
  readonly port: number;
  /** Every stream so far, in order of arrival. */
  readonly streams: readonly StreamRecord[];
  /** Streams not closed yet, on every connection. */
  openStreams(): number;
  /**
   * Connections open now (neither closed by the server nor by the client: see
   * {@link establishedClientPorts}), and accepted so far.
   */
  openSessions(): number;
  readonly sessionsAccepted: number;
  /** Destroys every open connection: after a test that failed midway. */
  dropSessions(): void;
  close(): Promise<void>;
}

export const GRPC_RESPONSE_HEADERS = { ':status': 200, 'content-type': 'application/grpc' } as const;

/**
 * Answers as a gRPC server does, with whatever it is given: the headers, these bytes as DATA, then
 * the trailers (without trailers, the DATA ends the stream).
 */
export function answer(stream: ServerHttp2Stream, headers: Record<string, string | number | string[]>, data: readonly Uint8Array[], trailers?: Record<string, string>): void {
  if (trailers === undefined) {
    stream.respond(headers, { endStream: data.length === 0 });
    data.forEach((chunk, index) => (index === data.length - 1 ? stream.end(chunk) : stream.write(chunk)));
    return;
  }
  stream.respond(headers, { waitForTrailers: true });
  stream.on('wantTrailers', () => stream.sendTrailers(trailers));
  for (const chunk of data) stream.write(chunk);
  stream.end();
}

/**
 * A gRPC server of the test's own on node:http2, on a loopback port, that misbehaves as each call's
 * method names (`behaviours`); a method it does not know is answered UNIMPLEMENTED, trailers-only.
 * It counts streams and connections from its side, for a test to see that the client closed
 * everything it opened.
 */
export async function startMisbehavingServer(behaviours: Readonly<Record<string, Misbehaviour>>): Promise<MisbehavingServer> {
  // Headers as large as a case sends (Node's default refuses header blocks over 64 KiB).
  const server = createServer({ maxSendHeaderBlockLength: 1 << 20 });
  const sessions: ServerHttp2Session[] = [];
  const open = new Set<ServerHttp2Session>();
  const clientPorts = new Map<ServerHttp2Session, number | undefined>();
  const streams: StreamRecord[] = [];
  const attempts = new Map<string, number>();
  server.on('session', (session) => {
    sessions.push(session);
    open.add(session);
    clientPorts.set(session, session.socket.remotePort);
    session.on('close', () => open.delete(session));
    session.on('error', () => session.destroy());
  });
  const running: MisbehavingServer = {
    get port() {
      return (server.address() as AddressInfo).port;
    },
    streams,
    openStreams: () => streams.filter((record) => !record.closed).length,
    openSessions: () => {
      const established = establishedClientPorts((server.address() as AddressInfo).port);
      return [...open].filter((session) => established === undefined || established.has(clientPorts.get(session)!)).length;
    },
    get sessionsAccepted() {
      return sessions.length;
    },
    dropSessions: () => {
      for (const session of open) session.destroy();
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        for (const session of open) session.destroy();
      }),
  };
  server.on('stream', (stream: ServerHttp2Stream, headers) => {
    const path = String(headers[':path']);
    const method = path.startsWith(`/${MISBEHAVING_SERVICE}/`) ? path.slice(MISBEHAVING_SERVICE.length + 2) : path;
    const session = sessions.indexOf(stream.session as ServerHttp2Session);
    const record: StreamRecord = { method, session, id: stream.id ?? 0, rstCode: undefined, closed: false };
    streams.push(record);
    const attempt = (attempts.get(method) ?? 0) + 1;
    attempts.set(method, attempt);
    stream.on('close', () => {
      record.closed = true;
      record.rstCode = stream.rstCode;
    });
    // A write after the client reset the stream fails here; the client's status is the test's concern.
    stream.on('error', () => stream.destroy());
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => {
      const behaviour = behaviours[method];
      if (behaviour === undefined) {
        stream.respond({ ...GRPC_RESPONSE_HEADERS, 'grpc-status': '12', 'grpc-message': `no misbehaviour ${method}` }, { endStream: true });
        return;
      }
      behaviour({ method, attempt, session, stream, request: Buffer.concat(chunks).subarray(5) }, running);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return running;
}

/**
 * The client ports of this server's TCP connections that the kernel holds ESTABLISHED
 * (/proc/net/tcp, state 01), or undefined where there is no such file (then a session counts as
 * open until node:http2 says it closed). A connection the client closed is not: once the client's
 * FIN or RST has arrived it is CLOSE_WAIT or gone. node:http2 alone cannot tell: once this server
 * has sent GOAWAY and no stream is left, nghttp2 wants nothing more from the connection
 * (nghttp2_session_want_read() is 0, "the application should drop the connection"), so node:http2
 * stops reading it, and never sees the client close it, nor its GOAWAY: the session stays open,
 * and this server, which keeps its side open, is then the only thing that does.
 */
function establishedClientPorts(serverPort: number): Set<number> | undefined {
  let table: string;
  try {
    table = readFileSync('/proc/net/tcp', 'latin1');
  } catch {
    return undefined;
  }
  const ports = new Set<number>();
  for (const line of table.split('\n').slice(1)) {
    const [, local, remote, state] = line.trim().split(/\s+/);
    if (state !== '01' || local === undefined || remote === undefined) continue;
    if (Number.parseInt(local.slice(local.indexOf(':') + 1), 16) === serverPort) ports.add(Number.parseInt(remote.slice(remote.indexOf(':') + 1), 16));
  }
  return ports;
}
