import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiError } from './api-error';

const MALFORMED = new ApiError(400, 'invalid_request', 'malformed HTTP request').toJson();
const HEADERS_TOO_LARGE = new ApiError(431, 'invalid_request', 'request headers too large').toJson();

export interface ListeningServer {
  readonly server: Server;
  readonly port: number;
}

/**
 * Listens with `app`. Requests that Node rejects before express sees them (malformed request
 * lines, oversized headers) still get the Error body rather than a bare connection reset.
 */
export async function listen(app: RequestListener, host: string, port: number): Promise<ListeningServer> {
  const server = createServer(app);
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    const [status, body] = error.code === 'HPE_HEADER_OVERFLOW' ? ['431 Request Header Fields Too Large', HEADERS_TOO_LARGE] : ['400 Bad Request', MALFORMED];
    socket.end(
      `HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return { server, port: (server.address() as AddressInfo).port };
}

/**
 * Stops accepting connections and resolves once every in-flight request has been answered.
 * Node closes an idle keep-alive connection only when its idle timeout fires, so idle ones are
 * swept every 50 ms: a connection closes as soon as its last response is out.
 */
export function closeGracefully(server: Server): Promise<void> {
  const sweep = setInterval(() => server.closeIdleConnections(), 50);
  return new Promise<void>((resolve, reject) => {
    server.close((error) => (error ? reject(error) : resolve()));
    server.closeIdleConnections();
  }).finally(() => clearInterval(sweep));
}
