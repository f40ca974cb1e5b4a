/**
 * Polls a condition that another process (a server being restarted, a driver's heartbeat) makes
 * true. Bounded, so a condition that never holds fails the test instead of hanging it.
 */
export async function waitFor(condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met in ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
