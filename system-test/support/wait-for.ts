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

/**
 * A product's promise that a change is in force within `withinMs` of now (a reloaded keys file,
 * an unban reaching every replica), asserted on what a busy machine can show. `check` asks the
 * services (it should send its requests at once) and is started every `everyMs`, not after the
 * previous one has answered, so a slow answer delays no check. A check that holds ends the wait
 * (the change, once in force, stays). The promise is broken only by a check begun after the
 * bound that does not hold: one begun before it may have reached the services before the change
 * took effect, however late its answer came. So the wait goes on until a check begun after the
 * bound has answered, and fails if that one does not hold.
 */
export async function promisedWithin(check: () => Promise<boolean>, withinMs: number, explain?: () => string, everyMs = 100): Promise<void> {
  const bound = Date.now() + withinMs;
  const begun: Array<Promise<boolean>> = [];
  let held = false;
  let late: Promise<boolean> | undefined;
  while (!held && late === undefined) {
    const afterBound = Date.now() > bound;
    const outcome = check();
    begun.push(outcome);
    if (afterBound) late = outcome;
    // A failing check's error is thrown below.
    void outcome.then((holds) => (held ||= holds), () => undefined);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  await Promise.all(begun);
  if (late !== undefined && !(await late)) {
    throw new Error(`not in force ${withinMs} ms after the change: a check begun after that did not hold${explain === undefined ? '' : `: ${explain()}`}`);
  }
}
