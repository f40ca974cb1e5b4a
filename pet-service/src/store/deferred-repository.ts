import { setTimeout as sleep } from 'node:timers/promises';
import { status as Status } from '@grpc/grpc-js';
import type { IdempotencyClaim } from '../pets/idempotency';
import type { NewPetRecord, PetChange, PetRecord } from '../pets/pet-record';
import { PetServiceError } from '../pets/pet-service-error';
import type { CreateResult, ListQuery, PetRepository, UpdateResult, VersionCondition } from './pet-repository';

/** Settings of {@link DeferredRepository}. */
export interface DeferredRepositoryOptions {
  /**
   * Opens the store. A {@link PetServiceError} (what a store throws when it is unreachable or too
   * slow) is tried again; any other error is final.
   */
  readonly open: () => Promise<PetRepository>;
  /** Told of each failed attempt that will be tried again, with the pause before the next. */
  readonly onRetry?: (error: PetServiceError, attempts: number, delayMs: number) => void;
  /** The first pause; each next one doubles, up to `maxDelayMs`. Default 250. */
  readonly firstDelayMs?: number;
  /** Default 5000: a store that comes up is found within about that, plus one attempt. */
  readonly maxDelayMs?: number;
  /** In [0, 1): spreads each pause over its upper half, so replicas started together do not retry in step. */
  readonly random?: () => number;
}

/**
 * A store that opens in the background, so that the service starts, and reports itself not ready,
 * before its store can be reached (pods that start together, a MongoDB replica set not initiated
 * yet), instead of exiting and being restarted with a growing backoff. Until the store is open,
 * every operation and `ping` fail UNAVAILABLE at once (gRPC health: NOT_SERVING); `open` is tried
 * again with a doubling, jittered pause for as long as it fails with a store error; once it
 * succeeds every call goes to the opened store.
 */
export class DeferredRepository implements PetRepository {
  /**
   * The opened store; rejects with the first error that waiting will not fix (refused
   * credentials, say), and never settles if the repository is closed first.
   */
  readonly opened: Promise<PetRepository>;
  /**
   * Settles once the first attempt has ended: resolves whether the store opened or will be tried
   * again, rejects as `opened` does. Usually the store answers at once, and a service that waits
   * for this before it listens is ready as soon as it says it listens.
   */
  readonly firstAttempt: Promise<void>;
  private store: PetRepository | undefined;
  private readonly closing = new AbortController();
  /** Settles when the attempts end: opened, failed for good, or stopped by {@link close}. */
  private readonly attempts: Promise<void>;

  constructor(private readonly options: DeferredRepositoryOptions) {
    let settle: { resolve(store: PetRepository): void; reject(error: unknown): void } | undefined;
    let settleFirst: { resolve(): void; reject(error: unknown): void } | undefined;
    this.opened = new Promise((resolve, reject) => (settle = { resolve, reject }));
    this.firstAttempt = new Promise((resolve, reject) => (settleFirst = { resolve, reject }));
    // The caller handles these; this only keeps an unhandled-rejection report away.
    this.opened.catch(() => undefined);
    this.firstAttempt.catch(() => undefined);
    this.attempts = this.openWhenReachable(() => settleFirst!.resolve()).then(
      (store) => {
        if (store !== undefined) settle!.resolve(store);
      },
      (error: unknown) => {
        settle!.reject(error);
        settleFirst!.reject(error);
      },
    );
  }

  /** Whether the store is open (and every call goes to it). */
  get isOpen(): boolean {
    return this.store !== undefined;
  }

  async create(pet: NewPetRecord, idempotency?: IdempotencyClaim): Promise<CreateResult> {
    return this.current().create(pet, idempotency);
  }

  async get(id: bigint, signal?: AbortSignal): Promise<PetRecord | undefined> {
    return this.current().get(id, signal);
  }

  async list(query: ListQuery, signal?: AbortSignal): Promise<PetRecord[]> {
    return this.current().list(query, signal);
  }

  async update(id: bigint, change: PetChange, versions: VersionCondition, idempotency?: IdempotencyClaim): Promise<UpdateResult> {
    return this.current().update(id, change, versions, idempotency);
  }

  async delete(id: bigint, versions: VersionCondition): Promise<void> {
    return this.current().delete(id, versions);
  }

  async ping(): Promise<void> {
    return this.current().ping();
  }

  /** Stops trying (after the attempt under way, if any), and closes the store if it opened. */
  async close(): Promise<void> {
    this.closing.abort();
    await this.attempts;
    await this.store?.close();
  }

  private current(): PetRepository {
    if (this.store === undefined) throw new PetServiceError(Status.UNAVAILABLE, 'pet store unavailable');
    return this.store;
  }

  /** The opened store, or `undefined` when {@link close} came first; `attempted` after the first attempt that did not fail for good. */
  private async openWhenReachable(attempted: () => void): Promise<PetRepository | undefined> {
    const { firstDelayMs = 250, maxDelayMs = 5000, random = Math.random } = this.options;
    const { signal } = this.closing;
    for (let attempts = 1; !signal.aborted; attempts += 1) {
      try {
        const store = await this.options.open();
        if (signal.aborted) {
          await store.close();
          return undefined;
        }
        this.store = store;
        attempted();
        return store;
      } catch (error) {
        if (!(error instanceof PetServiceError)) throw error;
        attempted();
        const ceiling = Math.min(maxDelayMs, firstDelayMs * 2 ** (attempts - 1));
        const delayMs = Math.round(ceiling / 2 + (random() * ceiling) / 2);
        this.options.onRetry?.(error, attempts, delayMs);
        await sleep(delayMs, undefined, { signal }).catch(() => undefined);
      }
    }
    return undefined;
  }
}
