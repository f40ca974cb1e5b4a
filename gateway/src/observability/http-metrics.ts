import type { GatewayMetrics } from './metrics';
import { perPair, perTriple } from './metric-children';

/**
 * Counts and times answered requests, whether express or the front door answered them, through
 * children bound once per route, method and status.
 */
export function createRequestRecorder(metrics: GatewayMetrics): (route: string, method: string, status: number, seconds: number) => void {
  const childrenOf = perTriple((route: string, method: string, status: number) => {
    const labels = { route, method, status: String(status) };
    return { requests: metrics.httpRequests.labels(labels), seconds: metrics.httpRequestSeconds.labels(labels) };
  });
  return (route, method, status, seconds) => {
    const children = childrenOf(route, method, status);
    children.requests.inc();
    children.seconds.observe(seconds);
  };
}

/** Counts the rate limiter's decisions by plan and outcome, through children bound once per pair. */
export function createDecisionCounter(metrics: GatewayMetrics): (plan: string, outcome: string) => void {
  const childOf = perPair((plan: string, outcome: string) => metrics.rateLimitDecisions.labels({ plan, outcome }));
  return (plan, outcome) => childOf(plan, outcome).inc();
}

/** Counts the requests the pet service shed (answered 503, over capacity), by route and method. */
export function countShed(metrics: GatewayMetrics): (route: string, method: string) => void {
  return (route, method) => metrics.httpRequestsShed.inc({ route, method });
}
