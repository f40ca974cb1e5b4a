/** What the queue holds: a call with its deadline and the queue's links. */
export interface Timed {
  readonly deadline: number;
  /** Links of {@link DeadlineQueue}; undefined outside it. */
  previous: Timed | undefined;
  next: Timed | undefined;
  queued: boolean;
  /** The deadline has passed. */
  expire(): void;
}

/** The longest delay a Node timer takes (2^31 − 1 ms); a longer one fires at once. */
export const MAX_TIMER_MS = 2_147_483_647;

/** A timer of a {@link DeadlineClock}: while ref'd, it keeps the process alive, as Node's do. */
export interface DeadlineTimer {
  ref(): unknown;
  unref(): unknown;
}

/** The time and the timer a {@link DeadlineQueue} runs on: Node's ({@link SYSTEM_CLOCK}), or a test's that it moves by hand. */
export interface DeadlineClock {
  /** Milliseconds since the epoch, as the deadlines are. */
  now(): number;
  /** Calls `fire` once `delayMs` (at most {@link MAX_TIMER_MS}) have passed. */
  setTimer(fire: () => void, delayMs: number): DeadlineTimer;
  clearTimer(timer: DeadlineTimer): void;
}

/** `Date.now` and Node's timers. */
export const SYSTEM_CLOCK: DeadlineClock = {
  now: Date.now,
  setTimer: (fire, delayMs) => setTimeout(fire, delayMs),
  clearTimer: (timer) => clearTimeout(timer as NodeJS.Timeout),
};

/**
 * The deadlines of a transport's calls under one timer, in place of a timer per call: the calls in
 * a list ordered by deadline, and a timer for the earliest. Calls made with the same timeout come in
 * deadline order, so adding is appending; a call that ends leaves the list at once, and the timer
 * armed for it, if it was the earliest, fires for nothing and is set for the next (about once per
 * timeout under steady load). What it saves per call is a Timeout and its place in Node's timer lists.
 */
export class DeadlineQueue {
  private head: Timed | undefined;
  private tail: Timed | undefined;
  private timer: DeadlineTimer | undefined;
  /** The deadline {@link timer} fires at. */
  private armedFor = Number.POSITIVE_INFINITY;
  private closed = false;

  constructor(private readonly clock: DeadlineClock = SYSTEM_CLOCK) {}

  add(item: Timed): void {
    // While calls are pending the timer keeps the process alive, as a timer per call would.
    if (this.head === undefined) this.timer?.ref();
    let after = this.tail;
    while (after !== undefined && after.deadline > item.deadline) after = after.previous;
    item.previous = after;
    item.next = after === undefined ? this.head : after.next;
    if (item.next === undefined) this.tail = item;
    else item.next.previous = item;
    if (after === undefined) this.head = item;
    else after.next = item;
    item.queued = true;
    if (item.deadline < this.armedFor) this.arm(item.deadline);
  }

  remove(item: Timed): void {
    if (!item.queued) return;
    item.queued = false;
    if (item.previous === undefined) this.head = item.next;
    else item.previous.next = item.next;
    if (item.next === undefined) this.tail = item.previous;
    else item.next.previous = item.previous;
    item.previous = undefined;
    item.next = undefined;
    // The timer armed for a call that ended fires for nothing later; it holds no process up.
    if (this.head === undefined) {
      if (this.closed) this.disarm();
      else this.timer?.unref();
    }
  }

  /**
   * The transport is closed: the items still queued keep their deadlines, and once none is left no
   * timer is either, where one armed for an ended call would outlive the transport by up to a
   * deadline.
   */
  close(): void {
    this.closed = true;
    if (this.head === undefined) this.disarm();
  }

  private arm(at: number): void {
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.armedFor = at;
    this.timer = this.clock.setTimer(() => this.fire(), Math.min(MAX_TIMER_MS, Math.max(0, at - this.clock.now())));
  }

  private disarm(): void {
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
  }

  private fire(): void {
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    const now = this.clock.now();
    while (this.head !== undefined && this.head.deadline <= now) {
      const expired = this.head;
      this.remove(expired);
      expired.expire();
    }
    if (this.head !== undefined) this.arm(this.head.deadline);
  }
}
