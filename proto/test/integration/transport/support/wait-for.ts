/** Resolves once `condition` holds, checked every few milliseconds; rejects after `timeoutMs`, saying what was last seen. */
export async function waitFor(condition: () => boolean, timeoutMs: number, describe: () => string = () => ''): Promise<void> {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs} ms${describe() === '' ? '' : `: ${describe()}`}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
