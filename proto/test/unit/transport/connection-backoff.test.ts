import { expect } from 'chai';
import { checkBackoff, ConnectionBackoff, GRPC_CONNECTION_BACKOFF } from '../../../transport/connection-backoff';

/** A clock the test moves. */
function clock(start = 1_000_000): { now: () => number; advance(ms: number): void } {
  let time = start;
  return { now: () => time, advance: (ms) => (time += ms) };
}

describe('ConnectionBackoff: grpc/grpc connection-backoff.md', () => {
  it('has the document’s parameters by default: 1 s, ×1.6, jitter 0.2, at most 120 s, 20 s to connect', () => {
    expect(GRPC_CONNECTION_BACKOFF).to.deep.equal({ initialMs: 1000, multiplier: 1.6, jitter: 0.2, maxMs: 120_000, minConnectTimeoutMs: 20_000 });
  });

  it('waits out each round’s backoff after a failure, growing by the multiplier up to the maximum (no jitter drawn)', () => {
    const time = clock();
    // random() 0.5 draws a jitter of 0: the waits are the bare sequence.
    const backoff = new ConnectionBackoff(GRPC_CONNECTION_BACKOFF, time.now, () => 0.5);
    const waits: number[] = [];
    for (let attempt = 0; attempt < 14; attempt += 1) {
      backoff.attemptDeadline();
      // Each attempt fails at once (a refused connection).
      const wait = backoff.failed();
      waits.push(Math.round(wait));
      time.advance(wait);
    }
    expect(waits).to.deep.equal([1000, 1600, 2560, 4096, 6554, 10486, 16777, 26844, 42950, 68719, 109951, 120000, 120000, 120000]);
  });

  it('counts the attempt’s own time against the wait: a slow failure waits only the rest of the round', () => {
    const time = clock();
    const backoff = new ConnectionBackoff(GRPC_CONNECTION_BACKOFF, time.now, () => 0.5);
    backoff.attemptDeadline();
    time.advance(700);
    expect(backoff.failed()).to.equal(300);
    time.advance(300);
    backoff.attemptDeadline();
    time.advance(2000);
    expect(backoff.failed(), 'the attempt outlasted its round').to.equal(0);
  });

  it('gives each attempt at least the minimum connect timeout', () => {
    const time = clock();
    const backoff = new ConnectionBackoff(GRPC_CONNECTION_BACKOFF, time.now, () => 0.5);
    expect(backoff.attemptDeadline() - time.now()).to.equal(20_000);
    for (let round = 0; round < 12; round += 1) time.advance(backoff.failed());
    // The round's backoff (120 s) is now longer than the minimum: the deadline is the round's end.
    expect(backoff.attemptDeadline() - time.now()).to.equal(120_000);
  });

  it('draws the jitter within ±20% of the backoff', () => {
    for (const [random, expected] of [
      [0, 1600 * 0.8],
      [1, 1600 * 1.2],
    ] as const) {
      const time = clock();
      const backoff = new ConnectionBackoff(GRPC_CONNECTION_BACKOFF, time.now, () => random);
      backoff.attemptDeadline();
      time.advance(backoff.failed());
      expect(backoff.failed(), `random ${random}`).to.be.closeTo(expected, 1e-9);
    }
  });

  it('starts over after a connection was made', () => {
    const time = clock();
    const backoff = new ConnectionBackoff({ ...GRPC_CONNECTION_BACKOFF, initialMs: 100, maxMs: 1000 }, time.now, () => 0.5);
    for (let round = 0; round < 6; round += 1) time.advance(backoff.failed());
    backoff.reset();
    backoff.attemptDeadline();
    expect(backoff.failed()).to.equal(100);
  });

  it('refuses parameters that are no backoff, naming the parameter', () => {
    expect(() => checkBackoff({ ...GRPC_CONNECTION_BACKOFF, multiplier: 0.5 })).to.throw(RangeError, /backoff\.multiplier/);
    expect(() => checkBackoff({ ...GRPC_CONNECTION_BACKOFF, jitter: 1 })).to.throw(RangeError, /backoff\.jitter/);
    expect(() => checkBackoff({ ...GRPC_CONNECTION_BACKOFF, maxMs: 10 })).to.throw(RangeError, /backoff\.maxMs/);
    expect(() => checkBackoff({ ...GRPC_CONNECTION_BACKOFF, initialMs: Number.NaN })).to.throw(RangeError, /backoff\.initialMs/);
    expect(() => checkBackoff({ ...GRPC_CONNECTION_BACKOFF, minConnectTimeoutMs: 0 })).to.throw(RangeError, /backoff\.minConnectTimeoutMs/);
  });
});
