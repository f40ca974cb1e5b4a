import { expect } from 'chai';
import { fieldCount } from '../../../src/http/raw-headers';

describe('fieldCount', () => {
  it('counts a field however its name is cased, and only that field', () => {
    const raw = ['Host', 'a', 'AUTHORIZATION', 'Bearer x', 'x-host', 'b', 'authorization', 'Bearer y', 'Hosts', 'c'];
    expect(fieldCount(raw, 'authorization')).to.equal(2);
    expect(fieldCount(raw, 'host')).to.equal(1);
    expect(fieldCount(raw, 'expect')).to.equal(0);
  });

  it('reads names only, never values', () => {
    expect(fieldCount(['X-Note', 'host', 'X-Other', 'Host'], 'host')).to.equal(0);
  });
});
