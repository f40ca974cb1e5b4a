import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface AdminServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * The admin listener, kept off the gRPC port: `GET /metrics` (Prometheus text), `GET /healthz`
 * (liveness) and `GET /readyz` (503 unless `ready()`: the gRPC health status of the whole server,
 * for probes that cannot speak gRPC over TLS). Readiness is also the standard gRPC health service
 * on the main port.
 */
export async function startAdminServer(registry: Registry, host: string, port: number, ready: () => boolean = () => true): Promise<AdminServer> {
  const server: Server = createServer((request, response) => {
    if (request.method === 'GET' && request.url === '/metrics') {
      registry.metrics().then(
        (text) => response.writeHead(200, { 'Content-Type': registry.contentType }).end(text),
        () => response.writeHead(500).end(),
      );
      return;
    }
    if (request.method === 'GET' && request.url === '/readyz') {
      const serving = ready();
      response.writeHead(serving ? 200 : 503, { 'Content-Type': 'application/json' }).end(serving ? '{"status":"ready"}' : '{"status":"not_serving"}');
      return;
    }
    if (request.method === 'GET' && request.url === '/healthz') {
      response.writeHead(200, { 'Content-Type': 'application/json' }).end('{"status":"ok"}');
      return;
    }
    response.writeHead(404, { 'Content-Type': 'application/json' }).end('{"code":"not_found","message":"no such resource","status":404}');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
