import { type ClientHttp2Session, constants } from 'node:http2';
import { connect as connectTcp } from 'node:net';
import { status as Status } from '@grpc/grpc-js';
import { PetServiceService } from '@petstore/proto';

/** A ListPets call the server already has (its HEADERS), whose request message is still to come. */
export interface HeldCall {
  /** Sends the message; resolves with the gRPC status name, or `reset` if the stream was torn down. */
  send(): Promise<string>;
  /** Resolves the same way without sending anything. */
  readonly outcome: Promise<string>;
}

/**
 * Opens a ListPets call over raw HTTP/2 and withholds its message, as a slow client would: the
 * call is in flight on the server, and stays so for as long as the test likes, with no test hook
 * in the service.
 */
export function holdCall(session: ClientHttp2Session): HeldCall {
  const stream = session.request({
    ':method': 'POST',
    ':path': '/petstore.v1.PetService/ListPets',
    'content-type': 'application/grpc',
    te: 'trailers',
  });
  const outcome = new Promise<string>((resolve) => {
    let grpcStatus: string | undefined;
    const record = (headers: Record<string, unknown>) => {
      if (headers['grpc-status'] !== undefined) grpcStatus = Status[Number(headers['grpc-status'])];
    };
    stream.on('response', record);
    stream.on('trailers', record);
    stream.on('error', () => resolve('reset'));
    stream.on('close', () => resolve(stream.rstCode === constants.NGHTTP2_NO_ERROR ? (grpcStatus ?? 'reset') : 'reset'));
    stream.resume();
  });
  return {
    outcome,
    send() {
      const message = PetServiceService.listPets.requestSerialize({ pageSize: 1, pageToken: '', status: 0 });
      const frame = Buffer.alloc(5 + message.length);
      frame.writeUInt32BE(message.length, 1);
      message.copy(frame, 5);
      stream.end(frame);
      return outcome;
    },
  };
}

/** Resolves once the server has processed every frame sent before: a PING is answered in order. */
export function roundTrip(session: ClientHttp2Session): Promise<void> {
  return new Promise((resolve, reject) => session.ping((error) => (error ? reject(error) : resolve())));
}

/** `connected`, or the error code of a TCP connect to a loopback port (ECONNREFUSED once it is closed). */
export function connectOutcome(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connectTcp(port, '127.0.0.1', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}
