import { randomUUID } from 'node:crypto';

/** What one beat learnt from the registry of counting processes. */
export interface ReplicaBeat {
  /** Processes whose last beat is younger than the time to live, the beating one included. */
  readonly live: number;
  /**
   * How long the registry has existed, ms. Younger than the time to live, it may lack live
   * processes that have not beaten since it was created (Redis restarted and forgot it).
   */
  readonly ageMs: number;
}

/** Where counting processes announce themselves: Redis, while it answers (see {@link REPLICA_BEAT_LUA}). */
export interface ReplicaRegistry {
  /** Records `member` as alive at `now`, forgets members older than `ttlMs`, and counts the rest. */
  beat(member: string, now: number, ttlMs: number): Promise<ReplicaBeat>;
  /** Forgets `member` at once, so the others count one fewer on their next beat. */
  leave(member: string): Promise<void>;
}

/** The registry's sorted set (member: a process's id, score: its last beat, ms) and its creation time; one hash slot. */
export const REPLICAS_KEY = '{rl:replicas}';
export const REPLICAS_SINCE_KEY = '{rl:replicas}:since';

/**
 * One beat, atomically. KEYS: the sorted set, the key holding when it was created. ARGV: member,
 * now (ms, the gateway's clock, as the limiter's script), time to live (ms). Both keys expire one
 * time to live after the last beat, so a fleet that is gone leaves nothing behind.
 * Reply: {live members, age of the set in ms}.
 */
export const REPLICA_BEAT_LUA = `
local now = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - ttl)
redis.call('PEXPIRE', KEYS[1], ttl)
local since = tonumber(redis.call('GET', KEYS[2]) or now)
redis.call('SET', KEYS[2], since, 'PX', ttl)
return {redis.call('ZCARD', KEYS[1]), now - since}
`;

/** Default of {@link ReplicaHeartbeatOptions.intervalMs}. */
export const BEAT_INTERVAL_MS = 5000;
/** Default of {@link ReplicaHeartbeatOptions.ttlMs}: three beats missed, and a process is no longer counted. */
export const BEAT_TTL_MS = 3 * BEAT_INTERVAL_MS;

export interface ReplicaHeartbeatOptions {
  readonly registry: ReplicaRegistry;
  /** Milliseconds since the epoch. */
  readonly now: () => number;
  /**
   * The count before any beat has been answered: a process that starts while Redis is down has
   * only this (RATE_LIMIT_FALLBACK_REPLICAS × GATEWAY_WORKERS, or GATEWAY_WORKERS).
   */
  readonly initial: number;
  readonly intervalMs?: number;
  readonly ttlMs?: number;
  /** This process's member; default a random UUID, so a restarted process is a new member. */
  readonly id?: string;
}

/**
 * How many processes count requests against the same limits: every process that serves requests
 * (each worker of `GATEWAY_WORKERS`, not each pod) beats every few seconds into a registry in
 * Redis and reads back how many beat within the time to live. The count is kept when Redis stops
 * answering, so that during an outage each process enforces its share of every limit
 * ({@link FallbackRateLimiter}). No request waits on a beat.
 *
 * A registry younger than the time to live (Redis restarted and lost it) may not list every live
 * process yet: until it is that old, a beat can raise the count but not lower it.
 */
export class ReplicaHeartbeat {
  private readonly registry: ReplicaRegistry;
  private readonly now: () => number;
  private readonly intervalMs: number;
  private readonly ttlMs: number;
  private readonly id: string;
  private count: number;
  private timer: NodeJS.Timeout | undefined;
  private beating = false;

  constructor(options: ReplicaHeartbeatOptions) {
    this.registry = options.registry;
    this.now = options.now;
    this.intervalMs = options.intervalMs ?? BEAT_INTERVAL_MS;
    this.ttlMs = options.ttlMs ?? BEAT_TTL_MS;
    this.id = options.id ?? randomUUID();
    this.count = Math.max(1, options.initial);
  }

  /** Counting processes, this one included: the last count Redis gave, else the initial one. */
  get replicas(): number {
    return this.count;
  }

  /** Beats now and then every interval, until {@link ReplicaHeartbeat.stop}; the timer keeps no process alive. */
  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => void this.beat(), this.intervalMs).unref();
    void this.beat();
  }

  /**
   * One beat; a failure keeps the count as it was. Resolves once answered. A beat asked for while
   * one is in flight (a slow Redis) is skipped rather than queued behind it.
   */
  async beat(): Promise<void> {
    if (this.beating) return;
    this.beating = true;
    try {
      const { live, ageMs } = await this.registry.beat(this.id, this.now(), this.ttlMs);
      this.count = ageMs >= this.ttlMs ? live : Math.max(this.count, live);
    } catch {
      // Redis is down or slow: the fallback limiter logs that; the last count stands.
    } finally {
      this.beating = false;
    }
  }

  /** Stops beating and leaves the registry, so the others stop counting this process at once; a failure to leave is ignored (the entry expires). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.registry.leave(this.id).catch(() => undefined);
  }
}
