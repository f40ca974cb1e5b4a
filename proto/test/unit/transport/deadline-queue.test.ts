import { createHook } from 'node:async_hooks';
import { expect } from 'chai';
import { DeadlineQueue, type Timed } from '../../../transport/deadline-queue';

/** An item that records when it expired. */
function item(deadline: number, expired: Array<{ deadline: number; at: number }>): Timed {
  return {
    deadline,
    previous: undefined,
    next: undefined,
    queued: false,
    expire() {
      expired.push({ deadline, at: Date.now() });
    },
  };
}

describe('DeadlineQueue: every deadline under one timer, as a timer per call would keep them', () => {
  it('expires each item at its deadline, never before, in deadline order, whatever order they came in', async () => {
    const queue = new DeadlineQueue();
    const expired: Array<{ deadline: number; at: number }> = [];
    const now = Date.now();
    // In order, out of order (earlier than the tail, earlier than the head), and equal deadlines.
    for (const offset of [40, 60, 20, 60, 10, 80, 50]) queue.add(item(now + offset, expired));
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(expired.map(({ deadline }) => deadline - now)).to.deep.equal([10, 20, 40, 50, 60, 60, 80]);
    for (const { deadline, at } of expired) expect(at, 'not before its deadline').to.be.at.least(deadline);
  });

  it('never expires an item removed before its deadline, and keeps the others’ deadlines when the earliest leaves', async () => {
    const queue = new DeadlineQueue();
    const expired: Array<{ deadline: number; at: number }> = [];
    const now = Date.now();
    const items = [10, 30, 50].map((offset) => item(now + offset, expired));
    for (const each of items) queue.add(each);
    queue.remove(items[0]!);
    queue.remove(items[2]!);
    queue.remove(items[2]!);
    expect(items[0]!.queued).to.equal(false);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(expired.map(({ deadline }) => deadline - now)).to.deep.equal([30]);
  });

  it('arms for a new earliest deadline at once, and keeps a deadline beyond a timer’s range without firing it', async () => {
    const queue = new DeadlineQueue();
    const expired: Array<{ deadline: number; at: number }> = [];
    const now = Date.now();
    const far = item(now + 30 * 86_400_000, expired);
    queue.add(far);
    queue.add(item(now + 20, expired));
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(expired.map(({ deadline }) => deadline - now)).to.deep.equal([20]);
    expect(far.queued, 'a month away').to.equal(true);
    // Removing the last item lets the process exit: mocha (exit: false) would otherwise wait a month.
    queue.remove(far);
  });

  it('once closed, keeps the deadlines still queued, then leaves no timer behind when the last item goes', async () => {
    // Unref'd timers alive: what the queue leaves armed for an item that ended (mocha's own are ref'd).
    const timers = new Map<number, NodeJS.Timeout>();
    const hook = createHook({
      init: (id, type, _trigger, resource) => {
        if (type === 'Timeout') timers.set(id, resource as NodeJS.Timeout);
      },
      destroy: (id) => {
        timers.delete(id);
      },
    }).enable();
    const unrefAlive = async (): Promise<number> => {
      await new Promise((resolve) => setImmediate(resolve));
      return [...timers.values()].filter((timer) => !timer.hasRef()).length;
    };
    try {
      const queue = new DeadlineQueue();
      const expired: Array<{ deadline: number; at: number }> = [];
      const now = Date.now();
      const [soon, late] = [now + 20, now + 60_000].map((deadline) => item(deadline, expired)) as [Timed, Timed];
      queue.add(soon);
      queue.add(late);
      queue.close();
      await new Promise((resolve) => setTimeout(resolve, 60));
      expect(expired.map(({ deadline }) => deadline - now), 'a deadline queued before close()').to.deep.equal([20]);
      queue.remove(late);
      expect(await unrefAlive(), 'timers left once the last item went').to.equal(0);

      // Closed while empty: the timer left armed for an item that ended goes at once.
      const idle = new DeadlineQueue();
      const ended = item(Date.now() + 60_000, expired);
      idle.add(ended);
      idle.remove(ended);
      expect(await unrefAlive(), 'the timer armed for the item that ended, before close()').to.equal(1);
      idle.close();
      expect(await unrefAlive(), 'timers left after close()').to.equal(0);
    } finally {
      hook.disable();
    }
  });
});
