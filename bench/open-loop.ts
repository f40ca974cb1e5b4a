/**
 * An open-loop load generator: requests leave at a fixed rate whatever the answers do, as users'
 * requests arrive, so that a server slower than the rate meets more work than it can do (a
 * closed loop of N connections would slow down with it and never overload it). Each request has
 * a connection of its own when it needs one (keep-alive, no cap). A generator starved of CPU
 * sends late: each outcome says how late (`lagMs`), apart from the latency the server caused.
 */
import { Agent, request as httpRequest } from 'node:http';

/** One request to send. */
export interface PlannedRequest {
  /** What the figures group it under: `list`, `get`, `create`. */
  readonly kind: string;
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body?: string;
}

/** What became of one request. */
export interface Outcome {
  readonly kind: string;
  /** The HTTP status, or 0 when no answer came (`error` says why). */
  readonly status: number;
  /** From when the request was sent to when its answer (or failure) came, in ms. */
  readonly latencyMs: number;
  /** How late the generator sent it after it was due, in ms. */
  readonly lagMs: number;
  readonly retryAfter: string | undefined;
  /** An error answer's body (4xx, 5xx): its Error `message` tells a shed 503 from another. */
  readonly body?: string;
  /** Set when no answer came: `timeout` (the client gave up) or the socket error's code. */
  readonly error?: string;
}

export interface OpenLoopOptions {
  readonly baseUrl: string;
  /** Requests per second. */
  readonly rate: number;
  readonly seconds: number;
  /** The request due next; called once per request, in order. */
  readonly next: () => PlannedRequest;
  /** A request unanswered after this long is abandoned (the client leaves) and counted `timeout`. */
  readonly clientTimeoutMs: number;
}

/** Sends `rate` requests per second for `seconds`, and resolves once every one has its outcome. */
export async function runOpenLoop({ baseUrl, rate, seconds, next, clientTimeoutMs }: OpenLoopOptions): Promise<Outcome[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
  const base = new URL(baseUrl);
  const total = Math.round(rate * seconds);
  const interval = 1000 / rate;
  const outcomes: Promise<Outcome>[] = [];
  const start = performance.now();
  try {
    for (let sent = 0; sent < total; ) {
      const now = performance.now();
      // Every request due by now leaves now; the timer only paces the loop.
      while (sent < total && start + sent * interval <= now) {
        const due = start + sent * interval;
        outcomes.push(send(agent, base, next(), due, clientTimeoutMs));
        sent += 1;
      }
      if (sent < total) await new Promise((resolve) => setTimeout(resolve, Math.max(0, start + sent * interval - performance.now())));
    }
    return await Promise.all(outcomes);
  } finally {
    agent.destroy();
  }
}

function send(agent: Agent, base: URL, planned: PlannedRequest, due: number, timeoutMs: number): Promise<Outcome> {
  const sent = performance.now();
  const lagMs = sent - due;
  return new Promise((resolve) => {
    let settled = false;
    const settle = (status: number, retryAfter: string | undefined, error?: string, body?: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({
        kind: planned.kind,
        status,
        latencyMs: performance.now() - sent,
        lagMs,
        retryAfter,
        ...(error === undefined ? {} : { error }),
        ...(body === undefined ? {} : { body }),
      });
    };
    const request = httpRequest(
      { agent, host: base.hostname, port: base.port, method: planned.method, path: planned.path, headers: planned.headers },
      (response) => {
        const status = response.statusCode ?? 0;
        let body: string | undefined;
        if (status >= 400) {
          body = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (body += chunk));
        } else response.resume();
        response.on('end', () => settle(status, response.headers['retry-after'] as string | undefined, undefined, body));
        response.on('error', (error: NodeJS.ErrnoException) => settle(0, undefined, error.code ?? 'error'));
      },
    );
    const timer = setTimeout(() => {
      settle(0, undefined, 'timeout');
      request.destroy();
    }, timeoutMs);
    request.on('error', (error: NodeJS.ErrnoException) => settle(0, undefined, error.code ?? 'error'));
    request.end(planned.body);
  });
}

/** The value at quantile `q` (0 to 1) of `values`; NaN when there are none. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}
