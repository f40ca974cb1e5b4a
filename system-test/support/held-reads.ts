import { MemoryPetRepository } from '../../pet-service/src/store/memory-pet-repository';
import type { ListQuery } from '../../pet-service/src/store/pet-repository';
import type { PetRecord } from '../../pet-service/src/pets/pet-record';

/**
 * The in-memory store, whose reads wait until the test releases them or their signal aborts (a
 * read is then dropped, rejecting with the signal's reason, as the MongoDB store's are): a slow
 * store that a test holds on cue, and that shows which reads were stopped.
 */
export class HeldReadsRepository extends MemoryPetRepository {
  /** Reads that reached the store. */
  started = 0;
  /** The reasons of the reads stopped by their signal, in order. */
  readonly aborted: unknown[] = [];
  private releaseAll: () => void = () => undefined;
  private readonly gate = new Promise<void>((resolve) => (this.releaseAll = resolve));

  /** Lets every held read, and every later one, go on. */
  release(): void {
    this.releaseAll();
  }

  override async get(id: bigint, signal?: AbortSignal): Promise<PetRecord | undefined> {
    await this.hold(signal);
    return super.get(id);
  }

  override async list(query: ListQuery, signal?: AbortSignal): Promise<PetRecord[]> {
    await this.hold(signal);
    return super.list(query);
  }

  private hold(signal: AbortSignal | undefined): Promise<void> {
    this.started += 1;
    return new Promise((resolve, reject) => {
      const abort = (): void => {
        this.aborted.push(signal!.reason);
        reject(signal!.reason as Error);
      };
      signal?.addEventListener('abort', abort, { once: true });
      void this.gate.then(() => {
        signal?.removeEventListener('abort', abort);
        resolve();
      });
    });
  }
}
