import { expect } from 'chai';
import { type DeadlineClock, DeadlineQueue, MAX_TIMER_MS, type Timed } from '../../../transport/deadline-queue';

/** A timer of {@link manualClock}: when it fires, and whether it would keep the process alive. */
interface ManualTimer {
  readonly at: number;
  readonly delayMs: number;
  readonly fire: () => void;
  referenced: boolean;
  ref(): ManualTimer;
  unref(): ManualTimer;
}

/** A clock that moves only when the test says, firing the timers due on the way, in time order. */
function manualClock(start: number) {
  let now = start;
  const timers = new Set<ManualTimer>();
  const clock: DeadlineClock = {
    now: () => now,
    setTimer(fire, delayMs) {
      const timer: ManualTimer = {
        at: now + delayMs,
        delayMs,
        fire,
        referenced: true,
        ref: () => ((timer.referenced = true), timer),
        unref: () => ((timer.referenced = false), timer),
      };
      timers.add(timer);
      return timer;
    },
    clearTimer: (timer) => void timers.delete(timer as ManualTimer),
  };
  return {
    clock,
    now: () => now,
    /** Moves to `time`, firing each timer due by then at its own time. */
    advanceTo(time: number): void {
      for (;;) {
        const due = [...timers].filter((timer) => timer.at <= time).sort((a, b) => a.at - b.at)[0];
        if (due === undefined) break;
        timers.delete(due);
        now = due.at;
        due.fire();
      }
      now = time;
    },
    /** The timers armed and not yet fired or cleared. */
    armed: (): ManualTimer[] => [...timers],
  };
}

/** An item that records the clock's time when it expired. */
function item(deadline: number, expired: Array<{ deadline: number; at: number }>, now: () => number): Timed {
  return {
    deadline,
    previous: undefined,
    next: undefined,
    queued: false,
    expire() {
      expired.push({ deadline, at: now() });
    },
  };
}

describe('DeadlineQueue: every deadline under one timer, as a timer per call would keep them', () => {
  const START = 1_800_000_000_000;

  it('expires each item at its deadline, never before, in deadline order, whatever order they came in', () => {
    const time = manualClock(START);
    const queue = new DeadlineQueue(time.clock);
    const expired: Array<{ deadline: number; at: number }> = [];
    // In order, out of order (earlier than the tail, earlier than the head), equal deadlines, and
    // one a millisecond after another.
    for (const offset of [40, 60, 20, 60, 10, 80, 50, 11]) queue.add(item(START + offset, expired, time.now));
    time.advanceTo(START + 9);
    expect(expired, 'a millisecond before the first deadline').to.deep.equal([]);
    time.advanceTo(START + 59);
    expect(expired.map(({ deadline }) => deadline - START)).to.deep.equal([10, 11, 20, 40, 50]);
    time.advanceTo(START + 1000);
    expect(expired.map(({ deadline }) => deadline - START)).to.deep.equal([10, 11, 20, 40, 50, 60, 60, 80]);
    for (const { deadline, at } of expired) expect(at, 'at its deadline').to.equal(deadline);
    expect(time.armed(), 'no timer once the queue is empty').to.have.length(0);
  });

  it('never expires an item removed before its deadline, and keeps the others’ deadlines when the earliest leaves', () => {
    const time = manualClock(START);
    const queue = new DeadlineQueue(time.clock);
    const expired: Array<{ deadline: number; at: number }> = [];
    const items = [10, 30, 50].map((offset) => item(START + offset, expired, time.now));
    for (const each of items) queue.add(each);
    queue.remove(items[0]!);
    queue.remove(items[2]!);
    queue.remove(items[2]!);
    expect(items[0]!.queued).to.equal(false);
    time.advanceTo(START + 100);
    expect(expired).to.deep.equal([{ deadline: START + 30, at: START + 30 }]);
  });

  it('arms for a new earliest deadline at once, and keeps a deadline beyond a timer’s range without firing it', () => {
    const time = manualClock(START);
    const queue = new DeadlineQueue(time.clock);
    const expired: Array<{ deadline: number; at: number }> = [];
    const far = item(START + 30 * 86_400_000, expired, time.now);
    queue.add(far);
    expect(time.armed().map((timer) => timer.delayMs), 'a month away: the longest delay a timer takes').to.deep.equal([MAX_TIMER_MS]);
    queue.add(item(START + 20, expired, time.now));
    expect(time.armed().map((timer) => timer.delayMs), 'armed for the new earliest instead').to.deep.equal([20]);
    time.advanceTo(START + 20);
    expect(expired.map(({ deadline }) => deadline - START)).to.deep.equal([20]);
    time.advanceTo(START + 20 + MAX_TIMER_MS);
    expect(far.queued, 'still a week and more away when the longest timer fired').to.equal(true);
    expect(time.armed(), 'armed again for it').to.have.length(1);
    time.advanceTo(far.deadline);
    expect(expired.map(({ deadline }) => deadline)).to.deep.equal([START + 20, far.deadline]);
  });

  it('holds the process up only while items are queued, and once closed leaves no timer when the last item goes', () => {
    const time = manualClock(START);
    const queue = new DeadlineQueue(time.clock);
    const expired: Array<{ deadline: number; at: number }> = [];
    const [soon, late] = [START + 20, START + 60_000].map((deadline) => item(deadline, expired, time.now)) as [Timed, Timed];
    queue.add(soon);
    queue.add(late);
    expect(time.armed().map((timer) => timer.referenced), 'items queued: the timer keeps the process alive').to.deep.equal([true]);
    queue.close();
    time.advanceTo(START + 20);
    expect(expired.map(({ deadline }) => deadline - START), 'a deadline queued before close()').to.deep.equal([20]);
    queue.remove(late);
    expect(time.armed(), 'timers left once the last item went').to.deep.equal([]);

    // Not closed: the timer armed for an item that ended stays, without holding the process up
    // (an item queued again holds it up again), and goes at close().
    const idleTime = manualClock(START);
    const idle = new DeadlineQueue(idleTime.clock);
    const ended = item(START + 60_000, expired, idleTime.now);
    idle.add(ended);
    idle.remove(ended);
    expect(idleTime.armed().map((timer) => timer.referenced), 'the timer armed for the item that ended').to.deep.equal([false]);
    const next = item(START + 90_000, expired, idleTime.now);
    idle.add(next);
    expect(idleTime.armed().map((timer) => timer.referenced), 'an item queued again').to.deep.equal([true]);
    idle.remove(next);
    idle.close();
    expect(idleTime.armed(), 'timers left after close()').to.deep.equal([]);
  });
});
