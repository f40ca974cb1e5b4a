import { expect } from 'chai';
import type { RateLimitDecision, RateLimiter, RateLimitPolicy } from '../../../src/rate-limit/rate-limiter';

/** A limiter under test, built on the suite's clock. */
export interface ContractSubject {
  readonly limiter: RateLimiter;
  /** Releases what the factory opened. */
  close(): Promise<void>;
}

const MINUTE = 60_000;
const DAY = 86_400_000;
/** A Tuesday, 00:00:00 UTC: the start of a minute and of a day. */
const DAY_START = Date.UTC(2030, 0, 1);

const policy = (perMinute: number, perDay: number, ban?: { threshold: number; seconds: number }): RateLimitPolicy => ({
  windows: [
    { name: 'minute', limit: perMinute, seconds: 60 },
    { name: 'day', limit: perDay, seconds: 86_400 },
  ],
  ban,
});

/**
 * What every {@link RateLimiter} store must do, run against each of them (memory in test/unit,
 * Redis in test/integration) on an injected clock.
 */
export function rateLimiterContract(name: string, create: (now: () => number) => Promise<ContractSubject>): void {
  describe(`${name} (rate limiter contract)`, () => {
    let now = DAY_START;
    let subject: ContractSubject;
    let limiter: RateLimiter;
    let sequence = 0;
    let key: string;

    before(async () => {
      subject = await create(() => now);
      limiter = subject.limiter;
    });
    after(() => subject?.close());
    beforeEach(() => {
      now = DAY_START;
      sequence += 1;
      key = `key:contract-${process.pid}-${Date.now()}-${sequence}`;
    });

    async function consumeTimes(times: number, limits: RateLimitPolicy): Promise<RateLimitDecision[]> {
      const decisions: RateLimitDecision[] = [];
      for (let i = 0; i < times; i += 1) decisions.push(await limiter.consume(key, limits));
      return decisions;
    }

    it('allows up to the minute limit, counting down, with the window ends as reset', async () => {
      now = DAY_START + 12_345;
      const decisions = await consumeTimes(3, policy(3, 100));
      expect(decisions.map((d) => d.outcome)).to.deep.equal(['allowed', 'allowed', 'allowed']);
      expect(decisions.map((d) => d.windows[0]!.remaining)).to.deep.equal([2, 1, 0]);
      expect(decisions.map((d) => d.windows[1]!.remaining)).to.deep.equal([99, 98, 97]);
      expect(decisions[0]!.windows[0]!.resetAt).to.equal(DAY_START + MINUTE);
      expect(decisions[0]!.windows[1]!.resetAt).to.equal(DAY_START + DAY);
      expect(decisions[0]!.at).to.equal(now);

      const limited = await limiter.consume(key, policy(3, 100));
      expect(limited.outcome).to.equal('limited');
      expect(limited.blocking!.window.name).to.equal('minute');
      expect(limited.blocking!.resetAt).to.equal(DAY_START + MINUTE);
      expect(limited.windows.map((w) => w.remaining)).to.deep.equal([0, 97]);
    });

    it('spends nothing from either window on a rejected request', async () => {
      const limits = policy(2, 3);
      await consumeTimes(2, limits);
      const minuteBlocked = await limiter.consume(key, limits);
      expect(minuteBlocked.outcome).to.equal('limited');
      expect(minuteBlocked.windows[1]!.remaining, 'day untouched by the minute rejection').to.equal(1);

      now += MINUTE;
      expect((await limiter.consume(key, limits)).outcome).to.equal('allowed');
      const dayBlocked = await limiter.consume(key, limits);
      expect(dayBlocked.outcome).to.equal('limited');
      expect(dayBlocked.blocking!.window.name).to.equal('day');
      expect(dayBlocked.windows[0]!.remaining, 'minute untouched by the day rejection').to.equal(1);

      await consumeTimes(5, limits);
      now += MINUTE;
      const later = await limiter.consume(key, limits);
      expect(later.outcome).to.equal('limited');
      expect(later.windows[0]!.remaining, 'no minute spent by any day rejection').to.equal(2);
    });

    it('rolls the minute over at the UTC minute boundary', async () => {
      now = DAY_START + 5 * MINUTE + 59_999;
      await consumeTimes(2, policy(2, 100));
      expect((await limiter.consume(key, policy(2, 100))).outcome).to.equal('limited');
      now += 1;
      const next = await limiter.consume(key, policy(2, 100));
      expect(next.outcome).to.equal('allowed');
      expect(next.windows[0]!.remaining).to.equal(1);
      expect(next.windows[0]!.resetAt).to.equal(DAY_START + 7 * MINUTE);
      expect(next.windows[1]!.remaining).to.equal(97);
    });

    it('rolls the day over at UTC midnight and names the day window as blocking', async () => {
      now = DAY_START + DAY - 90_000;
      await consumeTimes(2, policy(10, 2));
      now += 60_000;
      const blocked = await limiter.consume(key, policy(10, 2));
      expect(blocked.outcome).to.equal('limited');
      expect(blocked.blocking!.window.name).to.equal('day');
      expect(blocked.blocking!.resetAt).to.equal(DAY_START + DAY);
      now = DAY_START + DAY;
      const nextDay = await limiter.consume(key, policy(10, 2));
      expect(nextDay.outcome).to.equal('allowed');
      expect(nextDay.windows[1]!.remaining).to.equal(1);
      expect(nextDay.windows[1]!.resetAt).to.equal(DAY_START + 2 * DAY);
    });

    it('blocks on the window that ends last when both are full', async () => {
      await consumeTimes(2, policy(2, 2));
      const blocked = await limiter.consume(key, policy(2, 2));
      expect(blocked.blocking!.window.name).to.equal('day');
    });

    it('counts concurrent requests exactly', async () => {
      const decisions = await Promise.all(Array.from({ length: 25 }, () => limiter.consume(key, policy(10, 100))));
      expect(decisions.filter((d) => d.outcome === 'allowed')).to.have.length(10);
      const remaining = decisions.filter((d) => d.outcome === 'allowed').map((d) => d.windows[0]!.remaining);
      expect([...remaining].sort((a, b) => a - b)).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    });

    it('keeps subjects apart', async () => {
      await consumeTimes(1, policy(1, 10));
      expect((await limiter.consume(key, policy(1, 10))).outcome).to.equal('limited');
      expect((await limiter.consume(`${key}-other`, policy(1, 10))).outcome).to.equal('allowed');
    });

    it('bans after more than the threshold of rejected requests, for the ban length', async () => {
      const limits = policy(1, 100, { threshold: 3, seconds: 900 });
      now = DAY_START + 10_000;
      await consumeTimes(1, limits);
      const strikes = await consumeTimes(3, limits);
      expect(strikes.map((d) => d.outcome)).to.deep.equal(['limited', 'limited', 'limited']);
      const ban = await limiter.consume(key, limits);
      expect(ban.outcome).to.equal('banned');
      expect(ban.bannedUntil).to.equal(now + 900_000);

      now += 5 * MINUTE;
      const during = await limiter.consume(key, limits);
      expect(during.outcome, 'still banned in a fresh minute').to.equal('banned');
      expect(during.bannedUntil).to.equal(DAY_START + 10_000 + 900_000);

      now = DAY_START + 10_000 + 900_000;
      const after = await limiter.consume(key, limits);
      expect(after.outcome).to.equal('allowed');
      expect(after.windows[1]!.remaining, 'ban-time requests were not counted').to.equal(98);
    });

    it('counts strikes within one blocked window only', async () => {
      const limits = policy(1, 100, { threshold: 2, seconds: 900 });
      await consumeTimes(1, limits);
      expect((await consumeTimes(2, limits)).map((d) => d.outcome)).to.deep.equal(['limited', 'limited']);
      now += MINUTE;
      await consumeTimes(1, limits);
      expect((await consumeTimes(2, limits)).map((d) => d.outcome)).to.deep.equal(['limited', 'limited']);
      expect((await limiter.consume(key, limits)).outcome).to.equal('banned');
    });

    it('never bans under a policy without a ban', async () => {
      const limits = policy(1, 100);
      const decisions = await consumeTimes(30, limits);
      expect(decisions.filter((d) => d.outcome === 'banned')).to.have.length(0);
      expect(decisions.at(-1)!.outcome).to.equal('limited');
    });

    it('lifts a ban on unban, and reports whether one was in force', async () => {
      const limits = policy(1, 100, { threshold: 1, seconds: 900 });
      await consumeTimes(3, limits);
      expect((await limiter.consume(key, limits)).outcome).to.equal('banned');
      expect(await limiter.unban(key)).to.equal(true);
      const afterUnban = await limiter.consume(key, limits);
      expect(afterUnban.outcome, 'still over the minute limit, but no longer banned').to.equal('limited');
      now += MINUTE;
      expect((await limiter.consume(key, limits)).outcome).to.equal('allowed');
      expect(await limiter.unban(key)).to.equal(false);
      expect(await limiter.unban(`${key}-never-seen`)).to.equal(false);
    });

    it('counts a one-window policy (the per-IP bucket) to its limit until the UTC minute ends, never banning', async () => {
      const perIp: RateLimitPolicy = { windows: [{ name: 'ip-minute', limit: 3, seconds: 60 }] };
      now = DAY_START + 5 * MINUTE + 30_000;
      const allowed = await consumeTimes(3, perIp);
      expect(allowed.map((d) => [d.outcome, d.windows[0]!.remaining])).to.deep.equal([
        ['allowed', 2],
        ['allowed', 1],
        ['allowed', 0],
      ]);
      expect(allowed[0]!.windows[0]!.resetAt).to.equal(DAY_START + 6 * MINUTE);
      const refused = await consumeTimes(20, perIp);
      expect(new Set(refused.map((d) => d.outcome))).to.deep.equal(new Set(['limited']));
      expect(refused[0]!.blocking!.resetAt).to.equal(DAY_START + 6 * MINUTE);
      expect(refused[0]!.windows[0]!.remaining).to.equal(0);
      now = DAY_START + 6 * MINUTE;
      const next = await limiter.consume(key, perIp);
      expect([next.outcome, next.windows[0]!.remaining, next.windows[0]!.resetAt]).to.deep.equal(['allowed', 2, DAY_START + 7 * MINUTE]);
    });

    it('counts concurrent requests of a one-window policy exactly', async () => {
      const perIp: RateLimitPolicy = { windows: [{ name: 'ip-minute', limit: 10, seconds: 60 }] };
      const decisions = await Promise.all(Array.from({ length: 25 }, () => limiter.consume(key, perIp)));
      const remaining = decisions.filter((d) => d.outcome === 'allowed').map((d) => d.windows[0]!.remaining);
      expect([...remaining].sort((a, b) => a - b)).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    });

    it('does not report an expired ban as lifted', async () => {
      const limits = policy(1, 100, { threshold: 1, seconds: 60 });
      await consumeTimes(3, limits);
      now += 60_000;
      expect(await limiter.unban(key)).to.equal(false);
    });
  
    it('reports the usage that admitted and refused requests left, spending nothing', async () => {
      const limits = policy(3, 100, { threshold: 5, seconds: 900 });
      now = DAY_START + 2 * MINUTE + 7_000;
      expect((await limiter.usage(key, limits)).windows.map((w) => [w.used, w.remaining])).to.deep.equal([
        [0, 3],
        [0, 100],
      ]);
      const decisions = await consumeTimes(5, limits);
      const admitted = decisions.filter((d) => d.outcome === 'allowed').length;
      expect(admitted).to.equal(3);
      for (let read = 0; read < 3; read += 1) {
        const usage = await limiter.usage(key, limits);
        expect(usage.at).to.equal(now);
        expect(usage.bannedUntil).to.equal(undefined);
        expect(usage.windows.map((w) => [w.window.name, w.used, w.remaining, w.resetAt])).to.deep.equal([
          ['minute', admitted, 0, DAY_START + 3 * MINUTE],
          ['day', admitted, 100 - admitted, DAY_START + DAY],
        ]);
      }
      now += MINUTE;
      const nextMinute = await limiter.usage(key, limits);
      expect(nextMinute.windows.map((w) => w.used), 'the minute starts again; the day keeps its count').to.deep.equal([0, admitted]);
      const decision = await limiter.consume(key, limits);
      expect(decision.windows.map((w) => w.remaining), 'the reads spent nothing').to.deep.equal([2, 100 - admitted - 1]);
      now = DAY_START + DAY;
      expect((await limiter.usage(key, limits)).windows.map((w) => w.used)).to.deep.equal([0, 0]);
    });

    it('reports a ban and its end while it lasts, and none once lifted or over', async () => {
      const limits = policy(1, 100, { threshold: 1, seconds: 900 });
      now = DAY_START + 10_000;
      await consumeTimes(3, limits);
      const banned = await limiter.usage(key, limits);
      expect(banned.bannedUntil).to.equal(DAY_START + 10_000 + 900_000);
      expect(banned.windows.map((w) => w.used)).to.deep.equal([1, 1]);
      now += 899_999;
      expect((await limiter.usage(key, limits)).bannedUntil).to.equal(DAY_START + 10_000 + 900_000);
      now += 1;
      expect((await limiter.usage(key, limits)).bannedUntil, 'over').to.equal(undefined);
      now = DAY_START + 2 * DAY;
      await consumeTimes(3, limits);
      expect((await limiter.usage(key, limits)).bannedUntil).to.equal(now + 900_000);
      await limiter.unban(key);
      expect((await limiter.usage(key, limits)).bannedUntil, 'lifted').to.equal(undefined);
    });
  });
}
