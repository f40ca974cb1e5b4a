import { createServer, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';

/**
 * What a {@link startRawGrpcServer} answers every call with, frame by frame: what a gRPC server
 * library would never send (two responses to a unary call, bytes that are no message) as well as
 * what it sends in its own way (a status in the headers alone: trailers-only).
 */
export interface RawAnswer {
  /** Response headers besides `:status` 200 and `content-type: application/grpc`. */
  readonly headers?: Record<string, string>;
  /** Each sent as one length-prefixed message. */
  readonly messages?: readonly Uint8Array[];
  /** The trailers; without them the headers end the stream (trailers-only). */
  readonly trailers?: Record<string, string>;
}

export interface RawGrpcServer {
  readonly port: number;
  /** Calls received so far. */
  readonly calls: number;
  close(): Promise<void>;
}

/** One length-prefixed gRPC message, uncompressed. */
export function grpcFrame(message: Uint8Array): Buffer {
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
}

/**
 * A gRPC server written on node:http2 on a loopback port, answering every call with `answer` once
 * the request has been read: for the client's handling of answers a real server cannot be made
 * to give.
 */
export async function startRawGrpcServer(answer: RawAnswer): Promise<RawGrpcServer> {
  let calls = 0;
  const server = createServer();
  const sessions = new Set<ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  const respond = (stream: ServerHttp2Stream): void => {
    const headers = { ':status': 200, 'content-type': 'application/grpc', ...answer.headers };
    const { trailers } = answer;
    if (trailers === undefined) {
      stream.respond(headers, { endStream: true });
      return;
    }
    stream.respond(headers, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers(trailers));
    for (const message of answer.messages ?? []) stream.write(grpcFrame(message));
    stream.end();
  };
  server.on('stream', (stream: ServerHttp2Stream) => {
    calls += 1;
    stream.on('error', () => stream.destroy());
    stream.resume();
    stream.on('end', () => respond(stream));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    get calls() {
      return calls;
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        for (const session of sessions) session.destroy();
      }),
  };
}
