/**
 * Polls a condition that another process (a server being restarted, a driver's heartbeat) makes
 * true, every 50 ms. Bounded, so a condition that never holds fails the test instead of hanging it;
 * `explain`, when given, says in that failure what was seen instead.
 */
export async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs: number, explain?: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met in ${timeoutMs} ms${explain === undefined ? '' : `: ${explain()}`}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
