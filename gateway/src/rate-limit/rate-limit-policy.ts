import ipaddr from 'ipaddr.js';
import type { Limits } from './plans';
import type { BanPolicy, RateLimitPolicy } from './rate-limiter';

/** The deployment's settings that shape every policy (BAN_*, UNAUTHENTICATED_PER_MINUTE). */
export interface RateLimitSettings {
  /** Requests per minute per client IP for requests without a valid API key. */
  readonly unauthenticatedPerMinute: number;
  readonly ban: BanPolicy;
}

export const DEFAULT_RATE_LIMIT_SETTINGS: RateLimitSettings = Object.freeze({
  unauthenticatedPerMinute: 60,
  ban: Object.freeze({ threshold: 10, seconds: 900 }),
});

/** A key's plan (or keys-file override) as two windows, the UTC minute and the UTC day. */
export function keyPolicy(limits: Limits, ban: BanPolicy): RateLimitPolicy {
  return Object.freeze({
    windows: Object.freeze([
      Object.freeze({ name: 'minute', limit: limits.perMinute, seconds: 60 }),
      Object.freeze({ name: 'day', limit: limits.perDay, seconds: 86_400 }),
    ]),
    ban,
  });
}

/**
 * Requests without a valid key, per client IP, so guessing keys is throttled. No ban: many clients
 * may share one address behind NAT, and a ban would lock all of them out for its whole length.
 */
export function unauthenticatedPolicy(perMinute: number): RateLimitPolicy {
  return Object.freeze({ windows: Object.freeze([Object.freeze({ name: 'ip-minute', limit: perMinute, seconds: 60 })]) });
}

/** The limiter subject of an API key; the unban command and endpoint take the key id. */
export function keySubject(keyId: string): string {
  return `key:${keyId}`;
}

/**
 * The limiter subject of a client address (one `net.isIP` accepts), for requests without a valid
 * key: an IPv4 address, or the /64 prefix of an IPv6 one, in canonical text. A subscriber is
 * usually given a whole /64, so per IPv6 address one client could take 2^64 buckets; an
 * IPv4-mapped address (`::ffff:192.0.2.1`, what a dual-stack listener reports) counts as its IPv4
 * address, or every IPv4 client would share `::/64`. The zone index (`%eth0`), unbounded in
 * length, is dropped, so the subject, and a Redis key made of it, stays short. Anything else (a
 * socket that already closed has no address) is `ip:unknown`.
 */
export function ipSubject(ip: string): string {
  const text = ip.split('%', 1)[0]!;
  if (!ipaddr.isValid(text)) return 'ip:unknown';
  // process() turns an IPv4-mapped IPv6 address into its IPv4 address.
  const address = ipaddr.process(text);
  if (address.kind() === 'ipv4') return `ip:${address.toString()}`;
  return `ip:${new ipaddr.IPv6([...(address as ipaddr.IPv6).parts.slice(0, 4), 0, 0, 0, 0]).toString()}/64`;
}

/**
 * `policy` as one of `parts` processes that count apart enforces it, so that together they admit
 * about what one shared count would: each window's limit is ⌈limit ÷ parts⌉, at least 1, so `parts`
 * processes admit at most `parts − 1` requests more per window than the limit (docs/rate-limits.md
 * gives the arithmetic). The ban is unchanged. `parts` of 1 or less returns `policy` itself.
 */
export function splitPolicy(policy: RateLimitPolicy, parts: number): RateLimitPolicy {
  if (parts <= 1) return policy;
  const windows = Object.freeze(policy.windows.map((window) => Object.freeze({ ...window, limit: Math.ceil(window.limit / parts) })));
  return Object.freeze(policy.ban === undefined ? { windows } : { windows, ban: policy.ban });
}
