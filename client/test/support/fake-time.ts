/** A clock that only sleeps move, and a seeded random source: retries and pacing without real waits. */
export interface FakeTime {
  now(): number;
  /** Moves the clock to the end of the wait, at once; rejects if the signal is aborted. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
  /** Every wait asked for, in order. */
  readonly sleeps: number[];
}

/**
 * Time for a client under test: `now` reads a clock (the test's own, or a gateway's injected one)
 * and `sleep` moves it forward by the wait, at once. Concurrent sleeps add up, so time may run ahead
 * of a real run's, never behind.
 */
export function fakeTime(read: () => number, write: (now: number) => void): FakeTime {
  const sleeps: number[] = [];
  return {
    now: read,
    sleeps,
    async sleep(ms, signal) {
      signal.throwIfAborted();
      sleeps.push(ms);
      write(read() + ms);
    },
  };
}

/** A clock of the test's own, starting at `start`. */
export function ownTime(start: number): FakeTime {
  let now = start;
  return fakeTime(() => now, (value) => {
    now = value;
  });
}

/** mulberry32: a small seeded PRNG, so jitter is the same on every run. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
