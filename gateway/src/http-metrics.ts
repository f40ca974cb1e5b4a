import type { RequestHandler } from 'express';
import type { GatewayMetrics } from './metrics';
import { routeOf } from './request-logging';

/** Counts and times every HTTP request by route template, method and status. */
export function createHttpMetrics(metrics: GatewayMetrics): RequestHandler {
  return (request, response, next) => {
    const start = process.hrtime.bigint();
    response.once('finish', () => {
      const labels = { route: routeOf(request), method: request.method, status: String(response.statusCode) };
      metrics.httpRequests.inc(labels);
      metrics.httpRequestSeconds.observe(labels, Number(process.hrtime.bigint() - start) / 1e9);
    });
    next();
  };
}
