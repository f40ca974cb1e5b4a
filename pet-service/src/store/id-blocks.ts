/** A range of ids reserved for one replica alone: `first` to `last`, both included. */
export interface IdBlock {
  readonly first: bigint;
  readonly last: bigint;
}

/**
 * Reserves blocks for {@link createIdAllocator}. Every block it returns is disjoint from every
 * block it, or any other replica's source on the same store, ever returned, and starts above them
 * all; a block starts above `above` when that is given.
 */
export type ReserveIdBlock = (above?: bigint) => Promise<IdBlock>;

/** Hands out the ids of one replica. */
export interface IdAllocator {
  /** The next id: unique across replicas and restarts, increasing within this allocator. */
  next(): Promise<bigint>;
  /**
   * Drops the rest of the current block and makes the next id come from a block above `taken`:
   * for an id found in use, which means ids were written without a reservation (a counter
   * restored behind the data, or a replica of an earlier version during a rolling update).
   */
  skipPast(taken: bigint): void;
  /** Blocks reserved so far. */
  readonly blocks: number;
}

/**
 * Ids from reserved blocks: one reservation serves a block's worth of creates, so no create
 * writes a shared document (the hot spot of one counter updated per create). Concurrent callers
 * that find the block used up wait for one reservation; a failed reservation fails them and the
 * next call tries again. Ids left in a block when the process stops are never handed out.
 */
export function createIdAllocator(reserve: ReserveIdBlock): IdAllocator {
  let first = 1n;
  let next = 1n;
  let last = 0n;
  let above: bigint | undefined;
  let reserving: Promise<void> | undefined;
  let blocks = 0;

  const refill = (): Promise<void> => {
    reserving ??= reserve(above)
      .then((block) => {
        blocks += 1;
        if (above !== undefined && block.first <= above) return; // skipPast asked for more meanwhile
        first = block.first;
        next = block.first;
        last = block.last;
        above = undefined;
      })
      .finally(() => {
        reserving = undefined;
      });
    return reserving;
  };

  return {
    async next() {
      while (next > last) await refill();
      const id = next;
      next += 1n;
      return id;
    },
    skipPast(taken) {
      if (taken < first) return; // the block in use already starts above it
      above = above === undefined || taken > above ? taken : above;
      last = next - 1n;
    },
    get blocks() {
      return blocks;
    },
  };
}
