/**
 * Floor variant e: node:http and one ListPets per request written directly on node:http2: one
 * connection, the request encoded and the response decoded by the ts-proto code in proto/gen,
 * `grpc-timeout` sent but no timer, no keepalive, no retries but one of a stream refused as its
 * connection is recycled. What the transport itself costs.
 */
import { type ClientHttp2Session, connect, constants } from 'node:http2';
import { ListPetsRequest, ListPetsResponse } from '@petstore/proto';
import { DEADLINE_MS, PET_SERVICE_ADDR, serveListPets } from './variant-server';

/**
 * One connection at a time. The pet service recycles each connection at its maximum age (GOAWAY,
 * then a grace period for the calls in flight): new calls then go on a new connection.
 */
let session: ClientHttp2Session | undefined;
function currentSession(): ClientHttp2Session {
  if (session === undefined || session.closed || session.destroyed) {
    const opened = connect(`http://${PET_SERVICE_ADDR}`);
    opened.on('goaway', () => {
      if (session === opened) session = undefined;
    });
    opened.on('error', () => {
      if (session === opened) session = undefined;
    });
    session = opened;
  }
  return session;
}

const HEADERS = {
  [constants.HTTP2_HEADER_METHOD]: 'POST',
  [constants.HTTP2_HEADER_PATH]: '/petstore.v1.PetService/ListPets',
  [constants.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc',
  te: 'trailers',
  'grpc-timeout': `${DEADLINE_MS}m`,
};

/** One unary call: a length-prefixed message out, one back, the status from the trailers. */
function call(frame: Buffer): Promise<ListPetsResponse> {
  return new Promise((resolve, reject) => {
    const stream = currentSession().request(HEADERS);
    const chunks: Buffer[] = [];
    let status: string | undefined;
    stream.on('response', (headers) => (status = headers['grpc-status'] as string | undefined));
    stream.on('trailers', (trailers) => (status = trailers['grpc-status'] as string | undefined));
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('error', reject);
    stream.on('end', () => {
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      if (status !== '0' || body.length < 5) {
        reject(new Error(`grpc-status ${status}`));
        return;
      }
      resolve(ListPetsResponse.decode(body.subarray(5, 5 + body.readUInt32BE(1))));
    });
    stream.end(frame);
  });
}

/** RFC 9113 section 8.7: the server processed nothing of a refused stream, so it can be sent again. */
const refused = (error: unknown) =>
  error instanceof Error && /NGHTTP2_REFUSED_STREAM|ERR_HTTP2_GOAWAY_SESSION/.test(`${(error as NodeJS.ErrnoException).code} ${error.message}`);

function listPets(request: ListPetsRequest): Promise<ListPetsResponse> {
  const message = ListPetsRequest.encode(request).finish();
  const frame = Buffer.allocUnsafe(5 + message.length);
  frame[0] = 0;
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return call(frame).catch((error: unknown) => {
    if (!refused(error)) throw error;
    return call(frame);
  });
}

serveListPets('floor e (node:http + raw node:http2)', listPets, () => session?.close());
