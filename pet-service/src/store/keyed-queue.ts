/**
 * Runs operations one at a time per key, in arrival order; operations of different keys run
 * concurrently. Keys with nothing queued hold no memory.
 */
export class KeyedQueue<Key> {
  private readonly tails = new Map<Key, Promise<unknown>>();

  run<T>(key: Key, operation: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key);
    const result = previous === undefined ? operation() : previous.then(operation, operation);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** Keys with an operation running or queued (tests). */
  get size(): number {
    return this.tails.size;
  }
}
