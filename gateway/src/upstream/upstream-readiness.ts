import { connect } from 'node:net';
import type { ReadinessCheck } from '../pet-service-client/readiness';
import type { ProxyRoute } from './routes-file';

/**
 * One check per configured route, named `upstream <prefix>`, for the /readyz body only: an
 * upstream that is down costs its own routes (502), and failing readiness for it would take every
 * replica, and with them the pets routes, out of service. A check opens a TCP connection to the
 * upstream and closes it, within the route's timeout; it assumes no health path on the upstream.
 */
export function upstreamChecks(routes: readonly ProxyRoute[]): Record<string, ReadinessCheck> {
  return Object.fromEntries(routes.map((route) => [`upstream ${route.prefix}`, reachable(route.upstream, route.timeoutMs)]));
}

function reachable(url: URL, timeoutMs: number): ReadinessCheck {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = url.port === '' ? 80 : Number(url.port);
  return () =>
    new Promise((resolve, reject) => {
      const socket = connect({ host, port, timeout: timeoutMs });
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('timeout', () => {
        socket.destroy();
        reject(new Error(`no connection within ${timeoutMs} ms`));
      });
      socket.once('error', reject);
    });
}
