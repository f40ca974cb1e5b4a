/**
 * Floor variant u: node:http and one ListPets per request through undici's HTTP/2 client
 * (`H2CClient`: h2c with prior knowledge, one connection, as variant e), the gRPC framing and the
 * status read here as in e: a length-prefixed message out, the response's bytes and the trailers'
 * `grpc-status` back through a `dispatch` handler (undici's lowest API: no body stream, no
 * promise of its own). Set as the transport's production defaults where undici can be: a deadline
 * per call (a timer aborting the request, `grpc-timeout` sent), pings every 10 s; undici resends a
 * refused stream itself. What undici as the carrier costs, for the decision between it and
 * node:http2 (docs/decisions.md).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { type Dispatcher, H2CClient } from 'undici';
import { ListPetsRequest, ListPetsResponse } from '@petstore/proto';
import { DEADLINE_MS, PET_SERVICE_ADDR, serveListPets } from './variant-server';

const client = new H2CClient(`http://${PET_SERVICE_ADDR}`, {
  // A gRPC client keeps its connection: undici's default closes an idle one after 4 s.
  keepAliveTimeout: 600_000,
  keepAliveMaxTimeout: 600_000,
  // Client's option, which H2CClient passes on but does not declare.
  h2Options: { pingInterval: 10_000 },
} as H2CClient.Options);

const PATH = '/petstore.v1.PetService/ListPets';

/** One unary call's handler: the body collected, the status from the trailers (or the headers of a trailers-only answer). */
class UnaryHandler implements Dispatcher.DispatchHandler {
  private readonly chunks: Buffer[] = [];
  private status: string | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly resolve: (bytes: Buffer) => void,
    private readonly reject: (error: Error) => void,
  ) {}

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.timer = setTimeout(() => controller.abort(new Error('DEADLINE_EXCEEDED')), DEADLINE_MS);
  }

  onResponseStart(_controller: Dispatcher.DispatchController, _statusCode: number, headers: IncomingHttpHeaders): void {
    this.status = headers['grpc-status'] as string | undefined;
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.chunks.push(chunk);
  }

  onResponseEnd(_controller: Dispatcher.DispatchController, trailers: IncomingHttpHeaders): void {
    clearTimeout(this.timer);
    const status = (trailers['grpc-status'] as string | undefined) ?? this.status;
    const body = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    if (status !== '0' || body.length < 5) this.reject(new Error(`grpc-status ${status}`));
    else this.resolve(body.subarray(5, 5 + body.readUInt32BE(1)));
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    clearTimeout(this.timer);
    this.reject(error);
  }
}

function call(frame: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    client.dispatch(
      {
        method: 'POST',
        path: PATH,
        headers: { 'content-type': 'application/grpc', te: 'trailers', 'grpc-timeout': `${DEADLINE_MS}m` },
        body: frame,
      },
      new UnaryHandler(resolve, reject),
    );
  });
}

async function listPets(request: ListPetsRequest): Promise<ListPetsResponse> {
  const message = ListPetsRequest.encode(request).finish();
  const frame = Buffer.allocUnsafe(5 + message.length);
  frame[0] = 0;
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return ListPetsResponse.decode(await call(frame));
}

serveListPets('floor u (node:http + undici h2c)', listPets, () => void client.close());
