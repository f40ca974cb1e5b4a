import type { GatewayMetrics } from './metrics';

/** Counts and times one answered request, whether express or the rate-limit edge answered it. */
export function recordRequest(metrics: GatewayMetrics, route: string, method: string, status: number, seconds: number): void {
  const labels = { route, method, status: String(status) };
  metrics.httpRequests.inc(labels);
  metrics.httpRequestSeconds.observe(labels, seconds);
}

/** Counts the requests the pet service shed (answered 503, over capacity), by route and method. */
export function countShed(metrics: GatewayMetrics): (route: string, method: string) => void {
  return (route, method) => metrics.httpRequestsShed.inc({ route, method });
}
