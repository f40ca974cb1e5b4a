import { expect } from 'chai';
import { createReportThrottle } from '../../src/report-throttle';

describe('createReportThrottle', () => {
  it('passes a key at most once per interval, with the occurrences held back since; keys apart', () => {
    let now = 0;
    const pass = createReportThrottle({ intervalMs: 1000, now: () => now });
    expect(pass('a')).to.equal(1);
    expect(pass('a')).to.equal(undefined);
    expect(pass('b')).to.equal(1);
    now = 999;
    expect(pass('a')).to.equal(undefined);
    now = 1000;
    expect(pass('a')).to.equal(3);
    expect(pass('a')).to.equal(undefined);
  });

  it('forgets the key reported longest ago past maxKeys', () => {
    const pass = createReportThrottle({ intervalMs: 1000, now: () => 0, maxKeys: 2 });
    pass('a');
    pass('b');
    pass('c');
    expect(pass('a')).to.equal(1);
    expect(pass('c')).to.equal(undefined);
  });
});
