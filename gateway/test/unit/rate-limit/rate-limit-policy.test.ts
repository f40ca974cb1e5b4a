import { expect } from 'chai';
import { ipSubject } from '../../../src/rate-limit/rate-limit-policy';

describe('ipSubject', () => {
  it('keeps an IPv4 address as it is', () => {
    expect(ipSubject('203.0.113.7')).to.equal('ip:203.0.113.7');
  });

  it('buckets IPv6 by /64, whatever the spelling, so one subscriber cannot take 2^64 buckets', () => {
    const oneNetwork = ['2001:db8:1:2::1', '2001:DB8:1:2:ffff:ffff:ffff:ffff', '2001:0db8:0001:0002:0:0:0:9'].map(ipSubject);
    console.log(`      3 addresses in 2001:db8:1:2::/64 -> ${[...new Set(oneNetwork)].join(', ')}`);
    expect(new Set(oneNetwork)).to.deep.equal(new Set(['ip:2001:db8:1:2::/64']));
    expect(ipSubject('2001:db8:1:3::1')).to.equal('ip:2001:db8:1:3::/64');
  });

  it('counts an IPv4-mapped address as its IPv4 address, not as ::ffff:0:0/64', () => {
    expect(ipSubject('::ffff:203.0.113.7')).to.equal('ip:203.0.113.7');
    expect(ipSubject('::ffff:cb00:7108')).to.equal('ip:203.0.113.8');
  });

  it('drops the zone index, which net.isIP accepts at any length', () => {
    const subject = ipSubject(`fe80::1%${'a'.repeat(15_000)}`);
    console.log(`      fe80::1 with a 15,000-character zone -> ${subject} (${subject.length} characters)`);
    expect(subject).to.equal('ip:fe80::/64');
  });

  it('names no address "ip:unknown"', () => {
    expect(ipSubject('')).to.equal('ip:unknown');
  });
});
