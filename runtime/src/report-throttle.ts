/** Settings of {@link createReportThrottle}. */
export interface ReportThrottleOptions {
  /** Shortest time between two reports with the same key. */
  readonly intervalMs: number;
  /** Monotonic milliseconds. */
  readonly now: () => number;
  /** Keys remembered at most; past it the one reported longest ago is forgotten. Default 100. */
  readonly maxKeys?: number;
}

/**
 * Decides whether a report that may repeat without end (a store not up yet, a Sentinel that does
 * not resolve, a library's console line) is logged now: at most once per `intervalMs` for each key.
 * The function returns how many occurrences the report stands for (itself and those held back since
 * the last one), or `undefined` to hold it back.
 */
export function createReportThrottle({ intervalMs, now, maxKeys = 100 }: ReportThrottleOptions): (key: string) => number | undefined {
  const last = new Map<string, { at: number; held: number }>();
  return (key) => {
    const time = now();
    const entry = last.get(key);
    if (entry !== undefined && time - entry.at < intervalMs) {
      entry.held += 1;
      return undefined;
    }
    last.delete(key);
    if (last.size >= maxKeys) last.delete(last.keys().next().value!);
    last.set(key, { at: time, held: 0 });
    return 1 + (entry?.held ?? 0);
  };
}
