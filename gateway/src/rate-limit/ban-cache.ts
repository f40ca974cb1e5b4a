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
