import { RateLimiterRedis } from 'rate-limiter-flexible';
import { BanCache } from './ban-cache';
import { closeRedis, type RedisClient } from './redis-connection';
import { REPLICA_BEAT_LUA, type ReplicaBeat, type ReplicaRegistry, REPLICAS_KEY, REPLICAS_SINCE_KEY } from './replica-heartbeat';
import { RATE_LIMIT_LUA, SCRIPT_BANNED, SCRIPT_LIMITED } from './rate-limit-script';
import {
  banned,
  counterKey,
  counterKeyPrefix,
  decide,
  type RateLimitDecision,
  type RateLimiter,
  type RateLimitPolicy,
  type RateLimitUsage,
  usageOf,
  windowEnd,
  windowIndex,
} from './rate-limiter';
import { createWindowBucket, isSingleWindow, type WindowBucket } from './window-bucket';

export interface RedisRateLimiterOptions {
  /** One Redis, a Sentinel-managed one or a Cluster. Taken over: {@link RedisRateLimiter.close} quits it. */
  readonly redis: RedisClient;
  /** Milliseconds since the epoch; passed to the script so every replica and test agrees. */
  readonly now: () => number;
  /** How long a cached ban answers without Redis. Default 1000 ms. */
  readonly banRecheckMs?: number;
}

/** The script, defined once per number of windows (see {@link scriptName}). */
type ScriptedRedis = Record<string, (...keysAndArgs: (string | number)[]) => Promise<number[]>>;

/** Most windows a policy may have here: the script is defined up front for each count up to this. */
export const MAX_POLICY_WINDOWS = 4;

/**
 * The script's command name for a policy of `windows` windows, defined with its number of keys so
 * that a key comes first among the arguments: a Cluster client groups auto-pipelined commands by
 * their first argument's slot, and a leading key count would put every script in the slot of "5",
 * where a pipeline mixing other nodes' keys is refused.
 */
function scriptName(windows: number): string {
  return `rateLimit${windows}`;
}

/** The command name of {@link REPLICA_BEAT_LUA}. */
const REPLICA_BEAT = 'replicaBeat';

/** Counters outlive their window by this much, so a replica whose clock lags a little still finds them. */
const EXPIRY_SLACK_MS = 60_000;

/** Holds the ban's end (ms since the epoch) while `subject` is banned. */
function banKey(subject: string): string {
  return `${counterKeyPrefix(subject)}:ban`;
}

/**
 * Counters shared by every gateway replica, one script per request (EVALSHA, which ioredis
 * auto-pipelines with the other requests in flight, per node on a Cluster): the per-IP bucket is
 * rate-limiter-flexible's RateLimiterRedis; the key policy is this gateway's own script
 * ({@link RATE_LIMIT_LUA}), because the library cannot spend two windows in one step (see
 * docs/rate-limiter-design.md). Bans are cached per replica; see {@link BanCache}. Errors are thrown, not
 * hidden: {@link FallbackRateLimiter} decides what to do. Also the registry of the processes that
 * count ({@link ReplicaRegistry}), so that every command on the client is defined in one place.
 */
export class RedisRateLimiter implements RateLimiter, ReplicaRegistry {
  private readonly redis: RedisClient;
  private readonly scripted: ScriptedRedis;
  private readonly now: () => number;
  private readonly bans: BanCache;
  private readonly bucket: WindowBucket;

  constructor(options: RedisRateLimiterOptions) {
    this.redis = options.redis;
    this.scripted = this.redis as unknown as ScriptedRedis;
    this.now = options.now;
    this.bans = new BanCache(options.banRecheckMs ?? 1000);
    const createLibraryLimiter = (points: number, duration: number): RateLimiterRedis =>
      new RateLimiterRedis({ storeClient: this.redis, points, duration, keyPrefix: '' });
    this.bucket = createWindowBucket({ create: createLibraryLimiter, expirySlackSeconds: EXPIRY_SLACK_MS / 1000 });
    // Every command is defined before the first is sent. ioredis copies a client's defined commands
    // into an auto-pipeline when it opens one; a command defined later in the same turn is missing
    // from it, and the pipeline's replies then reach the wrong callbacks, one of which throws
    // outside any promise and ends the process (https://github.com/redis/ioredis/issues/1931).
    // The library defines its script when a limiter is constructed, so one is, here.
    for (let windows = 1; windows <= MAX_POLICY_WINDOWS; windows += 1) {
      this.redis.defineCommand(scriptName(windows), { lua: RATE_LIMIT_LUA, numberOfKeys: 1 + 2 * windows });
    }
    this.redis.defineCommand(REPLICA_BEAT, { lua: REPLICA_BEAT_LUA, numberOfKeys: 2 });
    createLibraryLimiter(1, 1);
    sealCommands(this.redis);
  }

  /** Whether the connection is up; while it is not, commands would fail at once. */
  get available(): boolean {
    return this.redis.status === 'ready';
  }

  async consume(subject: string, policy: RateLimitPolicy): Promise<RateLimitDecision> {
    const now = this.now();
    if (isSingleWindow(policy)) return this.bucket.consume(subject, policy, now);
    const cachedBanEnd = this.bans.lookup(subject, now);
    if (cachedBanEnd !== undefined) return banned(policy, now, cachedBanEnd);

    const prefix = counterKeyPrefix(subject);
    const keys = [banKey(subject)];
    const windowArgs: number[] = [];
    for (const window of policy.windows) {
      const index = windowIndex(window, now);
      keys.push(counterKey(subject, window, index), `${prefix}:strikes:${window.name}:${index}`);
      windowArgs.push(window.limit, windowEnd(window, now) - now + EXPIRY_SLACK_MS);
    }
    const banMs = (policy.ban?.seconds ?? 0) * 1000;
    const script = scriptName(policy.windows.length);
    if (this.scripted[script] === undefined) throw new RangeError(`a policy has at most ${MAX_POLICY_WINDOWS} windows, not ${policy.windows.length}`);
    const reply = await this.scripted[script](
      ...keys,
      now,
      policy.ban?.threshold ?? 0,
      now + banMs,
      banMs,
      ...windowArgs,
    );
    const [outcome, detail] = reply as [number, number];
    if (outcome === SCRIPT_BANNED) {
      this.bans.remember(subject, detail, now);
      return banned(policy, now, detail);
    }
    this.bans.forget(subject);
    return decide(policy, now, reply.slice(2), outcome === SCRIPT_LIMITED ? detail - 1 : undefined);
  }

  /**
   * One MGET of the ban and of the counters the script would spend at this instant: the same key
   * names, all in the subject's hash slot, so it is one atomic read on every topology. The ban
   * cache is bypassed: an operator asking wants Redis's answer, not one a second old.
   */
  async usage(subject: string, policy: RateLimitPolicy): Promise<RateLimitUsage> {
    const now = this.now();
    const counters = policy.windows.map((window) => counterKey(subject, window, windowIndex(window, now)));
    const [ban, ...counts] = await this.redis.mget(banKey(subject), ...counters);
    return usageOf(
      'shared',
      policy,
      now,
      counts.map((count) => Number(count ?? 0)),
      ban === null || ban === undefined ? undefined : Number(ban),
    );
  }

  async unban(subject: string): Promise<boolean> {
    this.bans.forget(subject);
    const until = await this.redis.getdel(banKey(subject));
    return until !== null && Number(until) > this.now();
  }

  async beat(member: string, now: number, ttlMs: number): Promise<ReplicaBeat> {
    const [live, ageMs] = await this.scripted[REPLICA_BEAT]!(REPLICAS_KEY, REPLICAS_SINCE_KEY, member, now, ttlMs);
    return { live: live!, ageMs: ageMs! };
  }

  async leave(member: string): Promise<void> {
    await this.redis.zrem(REPLICAS_KEY, member);
  }

  async close(): Promise<void> {
    await closeRedis(this.redis);
  }
}

/**
 * Makes a later `defineCommand` of a new name on `redis` throw at once, before anything is queued
 * (see the constructor of {@link RedisRateLimiter}), and one of a name already defined keep the
 * definition in force: rate-limiter-flexible defines its script again for each limiter it makes.
 */
function sealCommands(redis: RedisClient): void {
  const defined = redis as unknown as Record<string, unknown>;
  redis.defineCommand = (name: string): void => {
    if (typeof defined[name] === 'function') return;
    throw new Error(`Redis command ${name} must be defined before the client's first command (https://github.com/redis/ioredis/issues/1931)`);
  };
}
