import { keyPolicy, keySubject } from '../rate-limit/rate-limit-policy';
import type { BanPolicy, RateLimiter, RateLimitUsage, UsageScope, WindowUsage } from '../rate-limit/rate-limiter';
import type { ApiKey } from './api-keys';

/** One window of a key's usage, as the usage command and `GET /admin/usage` report it. */
export interface WindowUsageReport {
  readonly limit: number;
  readonly used: number;
  readonly remaining: number;
  /** ISO 8601, UTC: the end of the window. */
  readonly resetsAt: string;
}

/** One key's usage, as reported. */
export interface KeyUsageReport {
  readonly id: string;
  readonly plan: string;
  readonly minute: WindowUsageReport;
  readonly day: WindowUsageReport;
  readonly banned: boolean;
  /** ISO 8601, UTC, while banned; else null. */
  readonly bannedUntil: string | null;
}

/** Usage of every key asked for, read at one instant from one store. */
export interface UsageReport {
  /** `shared`: every replica's requests (Redis); `replica`: only the answering process's. */
  readonly scope: UsageScope;
  /** ISO 8601, UTC: when the figures were read. */
  readonly at: string;
  readonly keys: readonly KeyUsageReport[];
}

export interface UsageReportOptions {
  readonly limiter: RateLimiter;
  readonly keys: readonly ApiKey[];
  /** The deployment's ban settings, part of every key's policy. */
  readonly ban: BanPolicy;
  /** The scope of the store the limiter is built on, reported when no key was read. */
  readonly scope: UsageScope;
  /** Milliseconds since the epoch, reported when no key was read. */
  readonly now: () => number;
}

/**
 * Reads the usage of `keys` from the limiter (nothing is spent) and words it for operators. With
 * a limiter that falls back to memory, a key read while Redis is down is `replica`, and so then
 * is the whole report: its figures are not every replica's.
 */
export async function readUsageReport(options: UsageReportOptions): Promise<UsageReport> {
  const { limiter, keys, ban } = options;
  const usages = await Promise.all(keys.map((key) => limiter.usage(keySubject(key.id), keyPolicy(key.limits, ban))));
  const at = usages.length === 0 ? options.now() : Math.min(...usages.map((usage) => usage.at));
  const scope = usages.length === 0 ? options.scope : usages.every((usage) => usage.scope === 'shared') ? 'shared' : 'replica';
  return {
    scope,
    at: new Date(at).toISOString(),
    keys: keys.map((key, index) => keyUsageReport(key, usages[index]!)),
  };
}

function keyUsageReport(key: ApiKey, usage: RateLimitUsage): KeyUsageReport {
  const [minute, day] = usage.windows;
  return {
    id: key.id,
    plan: key.plan,
    minute: windowReport(minute!),
    day: windowReport(day!),
    banned: usage.bannedUntil !== undefined,
    bannedUntil: usage.bannedUntil === undefined ? null : new Date(usage.bannedUntil).toISOString(),
  };
}

function windowReport(usage: WindowUsage): WindowUsageReport {
  return { limit: usage.window.limit, used: usage.used, remaining: usage.remaining, resetsAt: new Date(usage.resetAt).toISOString() };
}
