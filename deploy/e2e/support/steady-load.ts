import { expectWithinContract } from '../../../system-test/support/openapi-validator';

export interface LoadSummary {
  readonly sent: number;
  /** Requests that got no HTTP response (connection refused or reset, timeout). */
  readonly failed: number;
  readonly byStatus: Readonly<Record<number, number>>;
  /** Responses the OpenAPI document does not allow, and requests that got none, with when. */
  readonly problems: readonly string[];
}

/**
 * Requests at a fixed rate (not as fast as answers come back, so that a slow moment does not
 * lower the load), alternating a page of pets and a create, every response checked against the
 * OpenAPI document. Stops by itself after `maxSeconds`, so a test that fails midway cannot leave
 * it running.
 */
export class SteadyLoad {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly statuses: number[] = [];
  private readonly problems: string[] = [];
  private failed = 0;
  private sent = 0;
  private readonly timer: NodeJS.Timeout;
  private readonly stopAt: number;

  constructor(
    private readonly baseUrl: string,
    private readonly headers: Record<string, string>,
    perSecond = 10,
    maxSeconds = 300,
  ) {
    const started = performance.now();
    this.stopAt = started + maxSeconds * 1000;
    this.timer = setInterval(() => {
      if (performance.now() > this.stopAt) {
        clearInterval(this.timer);
        return;
      }
      const request = this.send(this.sent++);
      this.inFlight.add(request);
      void request.finally(() => this.inFlight.delete(request));
    }, 1000 / perSecond);
  }

  private async send(n: number): Promise<void> {
    const create = n % 2 === 1;
    const url = create ? `${this.baseUrl}/v1/pets` : `${this.baseUrl}/v1/pets?limit=5`;
    const method = create ? 'POST' : 'GET';
    try {
      const response = await fetch(url, {
        method,
        headers: { ...this.headers, ...(create ? { 'Content-Type': 'application/json' } : {}) },
        body: create ? JSON.stringify({ name: `load-${n}`, categoryId: 1 + (n % 7) }) : undefined,
        signal: AbortSignal.timeout(10_000),
      });
      const text = await response.text();
      this.statuses.push(response.status);
      try {
        expectWithinContract(method, url, { status: response.status, headers: response.headers, text });
      } catch (error) {
        this.problems.push(`${new Date().toISOString()} ${method} ${response.status}: ${(error as Error).message}`);
      }
    } catch (error) {
      this.failed++;
      this.problems.push(`${new Date().toISOString()} ${method}: ${(error as Error).message} ${String((error as Error).cause ?? '')}`);
    }
  }

  /** Stops sending and waits for every request in flight. */
  async stop(): Promise<LoadSummary> {
    clearInterval(this.timer);
    await Promise.all(this.inFlight);
    const byStatus: Record<number, number> = {};
    for (const status of this.statuses) byStatus[status] = (byStatus[status] ?? 0) + 1;
    return { sent: this.sent, failed: this.failed, byStatus, problems: this.problems };
  }
}
