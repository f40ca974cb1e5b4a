import { connect, createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface TcpProxy {
  readonly port: number;
  /** Connections accepted so far, with when each arrived. */
  readonly accepted: number[];
  /** From now on forwards nothing and closes nothing, as a peer that vanished (a lost node) looks. */
  freeze(): void;
  close(): Promise<void>;
}

/**
 * A TCP proxy on 127.0.0.1:0 to `targetPort`, each connection forwarded after `delayMs` (a slow
 * connect), or accepted and closed at once when `targetPort` is undefined (a server that fails
 * every connection).
 */
export async function startTcpProxy(targetPort: number | undefined, delayMs = 0): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const accepted: number[] = [];
  let frozen = false;
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.on('error', () => socket.destroy());
    socket.on('close', () => sockets.delete(socket));
  };
  const server = createServer((inbound) => {
    accepted.push(Date.now());
    track(inbound);
    if (targetPort === undefined) {
      inbound.destroy();
      return;
    }
    if (frozen) {
      inbound.pause();
      return;
    }
    inbound.pause();
    setTimeout(() => {
      const outbound = connect(targetPort, '127.0.0.1');
      track(outbound);
      inbound.pipe(outbound);
      outbound.pipe(inbound);
      inbound.resume();
    }, delayMs);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    accepted,
    freeze() {
      frozen = true;
      for (const socket of sockets) {
        socket.unpipe();
        socket.pause();
      }
    },
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
