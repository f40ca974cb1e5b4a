import { expect } from 'chai';
import { PLAN_LIMITS } from '../../../src/rate-limit/plans';
import { ipSubject, keyPolicy, splitPolicy, unauthenticatedPolicy } from '../../../src/rate-limit/rate-limit-policy';

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

describe('splitPolicy', () => {
  const BAN = { threshold: 10, seconds: 900 };
  const limitsOf = (policy: ReturnType<typeof keyPolicy>) => policy.windows.map((window) => window.limit);

  it('gives each of n processes ⌈limit ÷ n⌉ of every window, the day window too, and keeps the ban', () => {
    const free = splitPolicy(keyPolicy(PLAN_LIMITS.free, BAN), 3);
    expect(limitsOf(free)).to.deep.equal([20, 334]);
    expect(free.ban).to.deep.equal(BAN);
    expect(free.windows.map((window) => [window.name, window.seconds])).to.deep.equal([
      ['minute', 60],
      ['day', 86_400],
    ]);
    expect(limitsOf(splitPolicy(keyPolicy({ perMinute: 10, perDay: 100 }, BAN), 3)), '10 over 3: 4 each, 12 in all').to.deep.equal([4, 34]);
    expect(limitsOf(splitPolicy(unauthenticatedPolicy(60), 7)), 'the per-IP bucket').to.deep.equal([9]);
    expect(splitPolicy(unauthenticatedPolicy(60), 2).ban).to.equal(undefined);
  });

  it('grants at least 1 per process when the limit is below the number of processes', () => {
    expect(limitsOf(splitPolicy(keyPolicy({ perMinute: 2, perDay: 5 }, BAN), 6))).to.deep.equal([1, 1]);
  });

  it('returns the policy itself for one process, or none known', () => {
    const policy = keyPolicy(PLAN_LIMITS.pro, BAN);
    expect(splitPolicy(policy, 1)).to.equal(policy);
    expect(splitPolicy(policy, 0)).to.equal(policy);
  });

  it('lets n processes together admit at least the limit and at most n − 1 more, for every limit and n', () => {
    const outside: string[] = [];
    let largest = 0;
    for (let parts = 1; parts <= 64; parts += 1) {
      for (let limit = 1; limit <= 2000; limit += 1) {
        const [share] = limitsOf(splitPolicy(unauthenticatedPolicy(limit), parts));
        const excess = parts * share! - limit;
        largest = Math.max(largest, excess);
        if (excess < 0 || excess > parts - 1) outside.push(`${limit} over ${parts}: ${share} each`);
      }
    }
    expect(outside).to.deep.equal([]);
    expect(largest, 'the bound is reached (limit 1 over 64 processes)').to.equal(63);
  });
});
