import type { Logger } from 'pino';
import type { HealthImplementation } from 'grpc-health-check';
import type { PetRepository } from './pet-repository';

/**
 * Keeps the gRPC health status in step with the store: NOT_SERVING while `ping` fails, SERVING
 * once it succeeds. Orchestrators and the gateway's readiness probe read it. The first probe sets
 * the status; each change after it is logged.
 */
export class StoreHealthMonitor {
  private timer: NodeJS.Timeout | undefined;
  /** What the last probe found; unknown before the first. */
  private serving: boolean | undefined;
  private stopped = false;

  constructor(
    private readonly repository: Pick<PetRepository, 'ping'>,
    private readonly health: HealthImplementation,
    private readonly services: readonly string[],
    private readonly logger: Logger,
  ) {}

  /** Probes now, resolving once that probe has set the status, then every `intervalMs` until {@link stop}. */
  async start(intervalMs: number): Promise<void> {
    const next = (): void => {
      if (!this.stopped) this.timer = setTimeout(() => void this.probe().finally(next), intervalMs).unref();
    };
    await this.probe();
    next();
  }

  /** One probe; returns whether the store answered. */
  async probe(): Promise<boolean> {
    const serving = await this.repository.ping().then(
      () => true,
      () => false,
    );
    if (serving !== this.serving && !this.stopped) {
      const known = this.serving !== undefined;
      this.serving = serving;
      for (const service of this.services) this.health.setStatus(service, serving ? 'SERVING' : 'NOT_SERVING');
      if (known && serving) this.logger.info('store reachable: SERVING');
      else if (known) this.logger.error('store unreachable: NOT_SERVING');
    }
    return serving;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}
