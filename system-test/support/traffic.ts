import { expectWithinContract } from './openapi-validator';
import { replicaSecret } from './replica-set';

/**
 * Requests from `workers` loops over every gateway until stopped; records every outcome, and as a
 * failure every response the OpenAPI document does not allow.
 */
export class Traffic {
  readonly statuses: number[] = [];
  readonly failures: string[] = [];
  slowest = 0;
  private running = true;
  private readonly loops: Promise<void>[];

  constructor(urls: readonly string[], keyId: string, workers: number) {
    this.loops = Array.from({ length: workers }, (_, worker) => this.loop(urls[worker % urls.length]!, keyId));
  }

  private async loop(url: string, keyId: string): Promise<void> {
    while (this.running) {
      const started = performance.now();
      try {
        const target = `${url}/v1/pets?limit=1`;
        const response = await fetch(target, {
          headers: { Authorization: `Bearer ${replicaSecret(keyId)}` },
          signal: AbortSignal.timeout(5000),
        });
        const text = await response.text();
        this.statuses.push(response.status);
        expectWithinContract('GET', target, { status: response.status, headers: response.headers, text });
      } catch (error) {
        this.failures.push((error as Error).message);
      }
      this.slowest = Math.max(this.slowest, performance.now() - started);
    }
  }

  /** Resolves once `more` further responses have arrived (bounded by `timeoutMs`). */
  async waitFor(more: number, timeoutMs = 15_000): Promise<void> {
    const target = this.statuses.length + more;
    const deadline = Date.now() + timeoutMs;
    while (this.statuses.length < target) {
      if (Date.now() > deadline) throw new Error(`only ${this.statuses.length} of ${target} responses`);
      // Not setImmediate: that spins a core, which on a 2-core machine the processes under test need.
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }
}
