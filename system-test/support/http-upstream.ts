import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request as a test upstream received it. */
export interface ReceivedRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  /** Body bytes so far. */
  bytes: number;
  /** The body, kept only while it is under 1 MiB. */
  body: Buffer;
  /** Resolves once the exchange ended without a finished response: the gateway gave up on it. */
  readonly abandoned: Promise<void>;
  /** Resolves once at least `count` body bytes have arrived. */
  receivedAtLeast(count: number): Promise<void>;
}

export type UpstreamHandler = (request: IncomingMessage, response: ServerResponse, received: ReceivedRequest) => void;

/** A real HTTP server on a loopback port, standing for a service behind the gateway. */
export interface HttpUpstream {
  readonly url: string;
  readonly requests: ReceivedRequest[];
  /** How the next requests are answered; by default 200 with `ok` once the body has arrived. */
  handle(handler: UpstreamHandler): void;
  /** Resolves with the next request to arrive (or the first one already there and not yet taken). */
  nextRequest(): Promise<ReceivedRequest>;
  close(): Promise<void>;
}

const KEEP = 1 << 20;

const answerOk: UpstreamHandler = (request, response) => {
  request.on('end', () => response.end('ok'));
};

export async function startHttpUpstream(): Promise<HttpUpstream> {
  let handler = answerOk;
  const requests: ReceivedRequest[] = [];
  let taken = 0;
  const waiting: Array<(request: ReceivedRequest) => void> = [];
  const server = createServer((request, response) => {
    const thresholds: Array<{ count: number; resolve: () => void }> = [];
    const received: ReceivedRequest = {
      method: request.method!,
      url: request.url!,
      headers: request.headers,
      bytes: 0,
      body: Buffer.alloc(0),
      abandoned: new Promise((resolve) => response.once('close', () => !response.writableFinished && resolve())),
      receivedAtLeast: (count) =>
        received.bytes >= count ? Promise.resolve() : new Promise((resolve) => thresholds.push({ count, resolve })),
    };
    request.on('data', (chunk: Buffer) => {
      received.bytes += chunk.length;
      if (received.bytes < KEEP) received.body = Buffer.concat([received.body, chunk]);
      for (const threshold of [...thresholds]) {
        if (received.bytes >= threshold.count) {
          thresholds.splice(thresholds.indexOf(threshold), 1);
          threshold.resolve();
        }
      }
    });
    request.on('error', () => undefined);
    requests.push(received);
    const waiter = waiting.shift();
    if (waiter !== undefined) {
      taken += 1;
      waiter(received);
    }
    handler(request, response, received);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    handle: (next) => {
      handler = next;
    },
    nextRequest: () => {
      if (taken < requests.length) return Promise.resolve(requests[taken++]!);
      return new Promise((resolve) => waiting.push(resolve));
    },
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
