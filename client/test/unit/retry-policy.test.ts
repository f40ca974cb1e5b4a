import { expect } from 'chai';
import { DEFAULT_RETRY_OPTIONS, parseRetryAfterMs, retryDelayMs } from '../../src/retry-policy';

describe('retry policy', () => {
  const options = { baseDelayMs: 100, maxDelayMs: 1000, budgetMs: 10_000 };

  it('draws full jitter below a ceiling that doubles per retry', () => {
    expect([0, 1, 2, 3].map((retry) => retryDelayMs(options, retry, () => 0.5))).to.deep.equal([50, 100, 200, 400]);
    expect(retryDelayMs(options, 2, () => 0)).to.equal(0);
    expect(retryDelayMs(options, 2, () => 0.9999)).to.equal(399);
  });

  it('caps the ceiling at maxDelayMs', () => {
    expect(retryDelayMs(options, 4, () => 0.5)).to.equal(500);
    expect(retryDelayMs(options, 40, () => 0.9999)).to.equal(999);
  });

  it('adds the jitter on top of a Retry-After floor, never below it', () => {
    expect(retryDelayMs(options, 0, () => 0, 3000)).to.equal(3000);
    expect(retryDelayMs(options, 1, () => 0.5, 3000)).to.equal(3100);
  });

  it('defaults to a budget that sits out a whole minute window', () => {
    expect(DEFAULT_RETRY_OPTIONS.budgetMs).to.be.greaterThan(60_000 + DEFAULT_RETRY_OPTIONS.maxDelayMs - 1);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.UTC(2030, 0, 1, 12, 0, 0);
    expect(parseRetryAfterMs('42', now)).to.equal(42_000);
    expect(parseRetryAfterMs('Tue, 01 Jan 2030 12:00:05 GMT', now)).to.equal(5000);
    expect(parseRetryAfterMs('Tue, 01 Jan 2030 11:00:00 GMT', now)).to.equal(0);
    expect(parseRetryAfterMs(null, now)).to.equal(undefined);
    expect(parseRetryAfterMs('soon', now)).to.equal(undefined);
  });
});
