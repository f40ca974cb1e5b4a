import type { PetServiceMetrics } from '../observability/metrics';
import type { IdempotencyClaim } from '../pets/idempotency';
import type { NewPetRecord, PetRecord } from '../pets/pet-record';
import type { CreateResult, ListQuery, PetRepository } from './pet-repository';

type Operation = 'create' | 'get' | 'list' | 'ping';

const labelsOf = (operation: Operation) => ({ ok: { operation, outcome: 'ok' }, error: { operation, outcome: 'error' } });
/** Made once: every operation would otherwise allocate two label objects. */
const LABELS = { create: labelsOf('create'), get: labelsOf('get'), list: labelsOf('list'), ping: labelsOf('ping') };

/**
 * Wraps a store so every operation is counted and timed, by outcome, and knows which are still
 * running: shutdown closes the store only once none is.
 */
export class InstrumentedRepository implements PetRepository {
  private running = 0;
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly inner: PetRepository,
    private readonly metrics: PetServiceMetrics,
  ) {}

  create(pet: NewPetRecord, idempotency?: IdempotencyClaim): Promise<CreateResult> {
    return this.observe('create', () => this.inner.create(pet, idempotency));
  }

  get(id: bigint): Promise<PetRecord | undefined> {
    return this.observe('get', () => this.inner.get(id));
  }

  list(query: ListQuery): Promise<PetRecord[]> {
    return this.observe('list', () => this.inner.list(query));
  }

  ping(): Promise<void> {
    return this.observe('ping', () => this.inner.ping());
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  /** Operations started and not yet settled. */
  get inFlight(): number {
    return this.running;
  }

  /** Resolves once no operation is in flight: at once if none is. */
  idle(): Promise<void> {
    if (this.running === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private async observe<T>(operation: Operation, run: () => Promise<T>): Promise<T> {
    const start = process.hrtime.bigint();
    let outcome: 'ok' | 'error' = 'error';
    this.running += 1;
    try {
      const result = await run();
      outcome = 'ok';
      return result;
    } finally {
      this.running -= 1;
      if (this.running === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
      const labels = LABELS[operation][outcome];
      this.metrics.storeOperations.inc(labels);
      this.metrics.storeOperationSeconds.observe(labels, Number(process.hrtime.bigint() - start) / 1e9);
    }
  }
}
