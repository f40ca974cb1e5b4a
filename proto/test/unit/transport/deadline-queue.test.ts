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
});
