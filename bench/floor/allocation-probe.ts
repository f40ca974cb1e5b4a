/**
 * Loaded into every app of the floor benchmark with `--require` (never into a deployment): on
 * SIGUSR2 it writes V8's count of bytes the process has allocated on its heap so far
 * (`total_allocated_bytes`, garbage included) to stderr as one JSON line, so the harness can take
 * the difference over a round and divide it by the round's requests. Read from outside the app, it
 * needs no endpoint and no change to the code measured; the baseline build is measured the same way.
 */
import { writeSync } from 'node:fs';
import { getHeapStatistics } from 'node:v8';

/** The key of the line, which the harness looks for among the app's stderr lines. */
export const ALLOCATED_BYTES = 'benchAllocatedBytes';

process.on('SIGUSR2', () => {
  writeSync(2, `${JSON.stringify({ [ALLOCATED_BYTES]: getHeapStatistics().total_allocated_bytes })}\n`);
});
