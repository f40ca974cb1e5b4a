import { expect } from 'chai';
import { RateLimitGate, type Ticket } from '../../src/rate-limit-gate';
import { ownTime, type FakeTime } from '../support/fake-time';

const START = Date.UTC(2030, 0, 1, 12, 0, 18);
const RESET = START / 1000 + 42;
const headers = (remaining: number, reset = RESET) =>
  new Headers({ 'X-RateLimit-Limit': '60', 'X-RateLimit-Remaining': String(remaining), 'X-RateLimit-Reset': String(reset) });
const signal = new AbortController().signal;

/** Whether `promise` has settled once everything already queued has run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => {
    done = true;
  });
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe('rate limit gate', () => {
  let time: FakeTime;

  beforeEach(() => {
    time = ownTime(START);
  });

  it('holds every request back until a 429 has passed', async () => {
    const gate = new RateLimitGate(false, time.now, time.sleep);
    gate.blockUntil(START + 10_000);
    gate.blockUntil(START + 5000);
    await gate.acquire(signal);
    expect(time.sleeps).to.deep.equal([10_000]);
  });

  it('without pacing, sends at once whatever the headers say', async () => {
    const gate = new RateLimitGate(false, time.now, time.sleep);
    gate.release(await gate.acquire(signal), headers(0));
    await gate.acquire(signal);
    expect(time.sleeps).to.deep.equal([]);
    expect(gate.snapshot).to.deep.equal({ limit: 60, remaining: 0, reset: RESET });
  });

  it('pacing: spends the window\'s remaining requests, then waits for its reset', async () => {
    const gate = new RateLimitGate(true, time.now, time.sleep);
    gate.release(await gate.acquire(signal), headers(2));
    const tickets: Ticket[] = [await gate.acquire(signal), await gate.acquire(signal)];
    expect(time.sleeps).to.deep.equal([]);
    const third = gate.acquire(signal);
    expect(await third).to.deep.equal({ probe: true });
    expect(time.sleeps).to.deep.equal([RESET * 1000 - START]);
    tickets.forEach((ticket) => gate.release(ticket, headers(0)));
  });

  it('pacing: counts requests in flight as spent', async () => {
    const gate = new RateLimitGate(true, time.now, time.sleep);
    gate.release(await gate.acquire(signal), headers(10));
    const inFlight = await Promise.all(Array.from({ length: 3 }, () => gate.acquire(signal)));
    // An answer that may not count the other two yet: 8 left means at most 6 more.
    gate.release(inFlight[0]!, headers(8));
    for (let index = 0; index < 6; index += 1) await gate.acquire(signal);
    expect(time.sleeps).to.deep.equal([]);
    await gate.acquire(signal);
    expect(time.sleeps).to.have.length(1);
  });

  it('pacing: while the window is unknown, one request goes alone to learn it', async () => {
    const gate = new RateLimitGate(true, time.now, time.sleep);
    const probe = await gate.acquire(signal);
    expect(probe.probe).to.equal(true);
    const second = gate.acquire(signal);
    expect(await settled(second)).to.equal(false);
    gate.release(probe, headers(5));
    expect((await second).probe).to.equal(false);
  });

  it('pacing: a probe that got no answer lets the next one go', async () => {
    const gate = new RateLimitGate(true, time.now, time.sleep);
    const probe = await gate.acquire(signal);
    const second = gate.acquire(signal);
    gate.release(probe, undefined);
    expect((await second).probe).to.equal(true);
  });

  it('pacing: ignores answers about a window already over', async () => {
    const gate = new RateLimitGate(true, time.now, time.sleep);
    gate.release(await gate.acquire(signal), headers(1, RESET + 60));
    const late = await gate.acquire(signal);
    gate.release(late, headers(50, RESET));
    await gate.acquire(signal);
    expect(time.sleeps).to.deep.equal([(RESET + 60) * 1000 - START]);
  });

  it('rejects a waiting request when its signal aborts', async () => {
    const gate = new RateLimitGate(true, time.now, time.sleep);
    await gate.acquire(signal);
    const controller = new AbortController();
    const waiting = gate.acquire(controller.signal);
    controller.abort();
    const error = await waiting.then(() => undefined, (reason: unknown) => reason);
    expect((error as Error).name).to.equal('AbortError');
  });
});
