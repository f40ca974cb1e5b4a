import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';

/** A TCP proxy that can lose answers: the request reaches the server, its response never the client. */
export interface CuttingProxy {
  readonly url: string;
  /** The next `count` connections forward their request, then close at the first byte of the response. */
  cutNextAnswers(count: number): void;
  /** How many responses were cut so far. */
  readonly cuts: number;
  close(): Promise<void>;
}

/** Listens on a free loopback port and forwards every connection to `target` (`host:port`). */
export async function startCuttingProxy(target: URL): Promise<CuttingProxy> {
  let toCut = 0;
  let cuts = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    const cut = toCut > 0;
    if (cut) toCut -= 1;
    client.pipe(upstream);
    if (!cut) {
      upstream.pipe(client);
      return;
    }
    upstream.once('data', () => {
      cuts += 1;
      client.destroy();
      upstream.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    cutNextAnswers(count) {
      toCut = count;
    },
    get cuts() {
      return cuts;
    },
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
