import { createServer, type Http2Server, type IncomingHttpHeaders, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';

/** A request as the server read it: its headers, and its body once whole. */
export interface ReceivedCall {
  readonly stream: ServerHttp2Stream;
  readonly headers: IncomingHttpHeaders;
  readonly body: Promise<Buffer>;
  /** The stream's RST_STREAM code once it closed (0: closed normally). */
  readonly closed: Promise<number>;
}

export interface H2Server {
  readonly port: number;
  readonly target: string;
  readonly calls: ReceivedCall[];
  readonly sessions: Set<ServerHttp2Session>;
  close(): Promise<void>;
}

/**
 * A plaintext HTTP/2 server on 127.0.0.1 (or `host`), port 0 unless given, that hands every stream to
 * `answer` as it arrives: the gRPC server whose every frame a test chooses.
 */
export async function startH2Server(answer: (call: ReceivedCall, index: number) => void, options: { host?: string; port?: number } = {}): Promise<H2Server> {
  const server: Http2Server = createServer();
  const calls: ReceivedCall[] = [];
  const sessions = new Set<ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('error', () => undefined);
    session.on('close', () => sessions.delete(session));
  });
  server.on('stream', (serverStream, headers) => {
    const stream = serverStream as ServerHttp2Stream;
    stream.on('error', () => undefined);
    const body = new Promise<Buffer>((resolve) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => resolve(Buffer.concat(chunks)));
      stream.on('close', () => resolve(Buffer.concat(chunks)));
    });
    const closed = new Promise<number>((resolve) => stream.on('close', () => resolve(stream.rstCode)));
    const call = { stream, headers, body, closed };
    calls.push(call);
    answer(call, calls.length - 1);
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, host, resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    target: `${host.includes(':') ? `[${host}]` : host}:${port}`,
    calls,
    sessions,
    close: () =>
      new Promise((resolve) => {
        for (const session of sessions) session.destroy();
        server.close(() => resolve());
      }),
  };
}

/** One length-prefixed gRPC message; `compressed` sets the flag byte. */
export function grpcFrame(message: Uint8Array, compressed = false): Buffer {
  const frame = Buffer.alloc(5 + message.length);
  frame[0] = compressed ? 1 : 0;
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
}

/** Answers OK with `messages` (raw bytes, each framed unless `raw`), once the request has been read. */
export function answerOk(call: ReceivedCall, message: Uint8Array = Buffer.from('pong'), extraHeaders: Record<string, string> = {}, trailers: Record<string, string> = {}): void {
  void call.body.then(() => {
    if (call.stream.destroyed) return;
    call.stream.respond({ ':status': 200, 'content-type': 'application/grpc', ...extraHeaders }, { waitForTrailers: true });
    call.stream.on('wantTrailers', () => call.stream.sendTrailers({ 'grpc-status': '0', ...trailers }));
    call.stream.end(grpcFrame(message));
  });
}
