import type { RequestHandler } from 'express';
import type { GatewayMetrics } from './metrics';
import { routeOf } from './request-logging';

/** Counts and times one answered request, whether express or the rate-limit edge answered it. */
export function recordRequest(metrics: GatewayMetrics, route: string, method: string, status: number, seconds: number): void {
  const labels = { route, method, status: String(status) };
  metrics.httpRequests.inc(labels);
  metrics.httpRequestSeconds.observe(labels, seconds);
}

/** Counts and times every HTTP request by route template, method and status. */
export function createHttpMetrics(metrics: GatewayMetrics): RequestHandler {
  return (request, response, next) => {
    const start = process.hrtime.bigint();
    response.once('finish', () => {
      recordRequest(metrics, routeOf(request), request.method, response.statusCode, Number(process.hrtime.bigint() - start) / 1e9);
    });
    next();
  };
}
