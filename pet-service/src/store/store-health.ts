import type { Logger } from 'pino';
import type { HealthImplementation } from 'grpc-health-check';
import type { PetRepository } from './pet-repository';

/**
 * Keeps the gRPC health status in step with the store: NOT_SERVING while `ping` fails, SERVING
 * again once it succeeds. Orchestrators and the gateway's readiness probe read it.
 */
export class StoreHealthMonitor {
  private timer: NodeJS.Timeout | undefined;
  private serving = true;
  private stopped = false;

  constructor(
    private readonly repository: Pick<PetRepository, 'ping'>,
    private readonly health: HealthImplementation,
    private readonly services: readonly string[],
    private readonly logger: Logger,
  ) {}

  /** Probes now, then every `intervalMs` until {@link stop}. */
  start(intervalMs: number): void {
    const loop = (): void => {
      void this.probe().finally(() => {
        if (!this.stopped) this.timer = setTimeout(loop, intervalMs).unref();
      });
    };
    loop();
  }

  /** One probe; returns whether the store answered. */
  async probe(): Promise<boolean> {
    const serving = await this.repository.ping().then(
      () => true,
      () => false,
    );
    if (serving !== this.serving && !this.stopped) {
      this.serving = serving;
      for (const service of this.services) this.health.setStatus(service, serving ? 'SERVING' : 'NOT_SERVING');
      if (serving) this.logger.info('store reachable again: SERVING');
      else this.logger.error('store unreachable: NOT_SERVING');
    }
    return serving;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}
