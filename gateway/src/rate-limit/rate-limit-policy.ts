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

/** The limiter subject of a client address, for requests without a valid key. */
export function ipSubject(ip: string): string {
  return `ip:${ip}`;
}
