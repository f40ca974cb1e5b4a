import { expect } from 'chai';
import { BanCache } from '../../../src/rate-limit/ban-cache';

describe('BanCache', () => {
  const T = 1_000_000;

  it('answers for a remembered ban until the recheck interval passes', () => {
    const cache = new BanCache(1000);
    cache.remember('key:a', T + 900_000, T);
    expect(cache.lookup('key:a', T + 999)).to.equal(T + 900_000);
    expect(cache.lookup('key:b', T)).to.equal(undefined);
  });

  it('lets exactly one request recheck once the interval has passed', () => {
    const cache = new BanCache(1000);
    cache.remember('key:a', T + 900_000, T);
    expect(cache.lookup('key:a', T + 1000), 'this one asks Redis').to.equal(undefined);
    expect(cache.lookup('key:a', T + 1001), 'the others keep the cached answer').to.equal(T + 900_000);
    expect(cache.lookup('key:a', T + 2000), 'and a second later, one asks again').to.equal(undefined);
  });

  it('drops a ban that has ended, and one that is forgotten', () => {
    const cache = new BanCache(1000);
    cache.remember('key:a', T + 500, T);
    expect(cache.lookup('key:a', T + 500)).to.equal(undefined);
    cache.remember('key:b', T + 900_000, T);
    cache.forget('key:b');
    expect(cache.lookup('key:b', T + 1)).to.equal(undefined);
  });
});
