interface CachedBan {
  until: number;
  checkedAt: number;
}

/**
 * The bans one replica has learnt from Redis, so that a banned key's flood is rejected without a
 * Redis round trip. A cached ban is trusted for `recheckMs`; then one request asks Redis again
 * (the others keep being answered here meanwhile), so a ban lifted on another replica or by the
 * unban command is noticed within `recheckMs`. That bounded poll was chosen over pub/sub: it needs
 * no second connection per replica and cannot miss a message sent while that connection was down.
 *
 * Not rate-limiter-flexible's in-memory blocking: a key blocked there is answered with the memory
 * block's own length and no reason (rate-limiter-flexible-limits.test.ts), so with a one-second block
 * Retry-After would say 1 during a 900 s ban and a ban would look like a limit; with a block as long
 * as the ban, an unban would reach no other replica until the ban ended.
 */
export class BanCache {
  private readonly bans = new Map<string, CachedBan>();

  constructor(private readonly recheckMs: number) {}

  /**
   * The end of `subject`'s ban when this replica may answer without Redis, else `undefined`. An
   * `undefined` for a cached ban means the caller is the one request that rechecks it now.
   */
  lookup(subject: string, now: number): number | undefined {
    const ban = this.bans.get(subject);
    if (ban === undefined) return undefined;
    if (ban.until <= now) {
      this.bans.delete(subject);
      return undefined;
    }
    if (now - ban.checkedAt < this.recheckMs) return ban.until;
    ban.checkedAt = now;
    return undefined;
  }

  remember(subject: string, until: number, now: number): void {
    this.bans.set(subject, { until, checkedAt: now });
  }

  forget(subject: string): void {
    this.bans.delete(subject);
  }
}
