import { expect } from 'chai';
import { closestToExhaustion, policyField, rateLimitHeaders, secondsUntil } from '../../../src/rate-limit/rate-limit-headers';
import { banned, decide, type RateLimitPolicy } from '../../../src/rate-limit/rate-limiter';

const FREE: RateLimitPolicy = {
  windows: [
    { name: 'minute', limit: 60, seconds: 60 },
    { name: 'day', limit: 1000, seconds: 86_400 },
  ],
  ban: { threshold: 10, seconds: 900 },
};
const MINUTE_START = Date.UTC(2030, 0, 1, 12, 30);
const AT = MINUTE_START + 18_000;

describe('rate-limit-headers', () => {
  it('describes the window closest to exhaustion with integer X-RateLimit-* fields', () => {
    const headers = rateLimitHeaders(decide(FREE, AT, [1, 1], undefined));
    expect(headers['X-RateLimit-Limit']).to.equal('60');
    expect(headers['X-RateLimit-Remaining']).to.equal('59');
    expect(headers['X-RateLimit-Reset']).to.equal(String((MINUTE_START + 60_000) / 1000));
    expect(headers['Retry-After']).to.equal(undefined);
  });

  it('switches to the day window when it has fewer requests left', () => {
    const headers = rateLimitHeaders(decide(FREE, AT, [2, 990], undefined));
    expect(headers['X-RateLimit-Limit']).to.equal('1000');
    expect(headers['X-RateLimit-Remaining']).to.equal('10');
    expect(headers['X-RateLimit-Reset']).to.equal(String(Date.UTC(2030, 0, 2) / 1000));
  });

  it('emits the draft RateLimit-Policy and RateLimit fields for every window', () => {
    const headers = rateLimitHeaders(decide(FREE, AT, [1, 1], undefined));
    expect(headers['RateLimit-Policy']).to.equal('"minute";q=60;w=60, "day";q=1000;w=86400');
    const secondsToMidnight = (Date.UTC(2030, 0, 2) - AT) / 1000;
    expect(headers.RateLimit).to.equal(`"minute";r=59;t=42, "day";r=999;t=${secondsToMidnight}`);
  });

  it('gives a limited request Remaining 0 and Retry-After for the blocking minute', () => {
    const headers = rateLimitHeaders(decide(FREE, AT + 500, [60, 60], 0));
    expect(headers['X-RateLimit-Remaining']).to.equal('0');
    expect(headers['X-RateLimit-Limit']).to.equal('60');
    expect(headers['Retry-After']).to.equal('42');
  });

  it('makes Retry-After reflect the day window when the day blocks', () => {
    const at = Date.UTC(2030, 0, 1, 23, 0, 0, 250);
    const headers = rateLimitHeaders(decide(FREE, at, [3, 1000], 1));
    expect(headers['Retry-After']).to.equal('3600');
    expect(headers['X-RateLimit-Limit']).to.equal('1000');
    expect(headers['X-RateLimit-Remaining']).to.equal('0');
    expect(headers['X-RateLimit-Reset']).to.equal(String(Date.UTC(2030, 0, 2) / 1000));
  });

  it('rounds Retry-After up to whole seconds and never below 1', () => {
    expect(secondsUntil(AT + 1, AT)).to.equal(1);
    expect(secondsUntil(AT + 1001, AT)).to.equal(2);
    expect(secondsUntil(AT, AT)).to.equal(1);
    const headers = rateLimitHeaders(decide(FREE, MINUTE_START + 59_999, [60, 60], 0));
    expect(headers['Retry-After']).to.equal('1');
  });

  // Issue 17: the ban was reported as the minute window ("minute";r=0;t=898, whose policy says
  // w=60), and the day window was left out.
  it('describes a ban as a "ban" entry of its own: q=0 for its length, nothing remaining until it ends', () => {
    const until = AT + 899_400;
    const headers = rateLimitHeaders(banned(FREE, AT, until));
    expect(headers['Retry-After']).to.equal('900');
    expect(headers['RateLimit-Policy']).to.equal('"minute";q=60;w=60, "day";q=1000;w=86400, "ban";q=0;w=900');
    expect(headers.RateLimit).to.equal('"ban";r=0;t=900');
    expect(headers['X-RateLimit-Limit']).to.equal('0');
    expect(headers['X-RateLimit-Remaining']).to.equal('0');
    expect(headers['X-RateLimit-Reset']).to.equal(String(Math.ceil(until / 1000)));
  });

  it('leaves the "ban" entry out while no ban is in force', () => {
    for (const decision of [decide(FREE, AT, [7, 9], undefined), decide(FREE, AT, [60, 70], 0)]) {
      const headers = rateLimitHeaders(decision);
      expect(headers['RateLimit-Policy']).to.equal('"minute";q=60;w=60, "day";q=1000;w=86400');
      expect(headers.RateLimit).to.not.include('"ban"');
    }
  });

  it('every numeric field is an integer', () => {
    for (const decision of [decide(FREE, AT + 123, [7, 9], undefined), decide(FREE, AT + 777, [60, 70], 0), banned(FREE, AT, AT + 1234)]) {
      const headers = rateLimitHeaders(decision);
      for (const name of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']) {
        expect(headers[name], name).to.match(/^[0-9]+$/);
      }
      if (headers['Retry-After'] !== undefined) expect(headers['Retry-After']).to.match(/^[1-9][0-9]*$/);
    }
  });

  it('prefers the later window on a tie', () => {
    const decision = decide(FREE, AT, [55, 995], undefined);
    expect(closestToExhaustion(decision.windows).window.name).to.equal('day');
  });

  it('gives a one-window policy a one-item policy field', () => {
    expect(policyField({ windows: [{ name: 'ip-minute', limit: 60, seconds: 60 }] })).to.equal('"ip-minute";q=60;w=60');
  });
});
