import { expect } from 'chai';
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, RateLimiterUnion } from 'rate-limiter-flexible';
import { commandCalls, type RedisServer, startRedisOrSkip } from '../../../../system-test/support/redis-server';

/** The rejection of `promise`, which must reject. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.fail('expected a rejection'),
    (reason: unknown) => reason,
  );
}

/**
 * Why the API-key policy is the gateway's own code and not rate-limiter-flexible's (see
 * docs/rate-limiter-design.md): each test pins down, against a real Redis, one behaviour of the library
 * that the product cannot accept. If one of them starts failing after an upgrade, the library may
 * now do the job, and the own code it justifies should be reconsidered.
 */
describe('what rate-limiter-flexible cannot do for the API-key policy', function () {
  let server: RedisServer;
  let redis: Redis;
  let sequence = 0;
  let key: string;

  before(async function () {
    server = await startRedisOrSkip(this);
    redis = new Redis(server.url);
  });
  after(async () => {
    redis?.disconnect();
    await server?.stop();
  });
  beforeEach(() => {
    sequence += 1;
    key = `proof-${sequence}`;
  });

  it('RateLimiterUnion spends a minute point on a request the day window rejects (its issue #280)', async () => {
    const minute = new RateLimiterRedis({ storeClient: redis, keyPrefix: 'minute', points: 60, duration: 60 });
    const day = new RateLimiterRedis({ storeClient: redis, keyPrefix: 'day', points: 1, duration: 86_400 });
    const union = new RateLimiterUnion(minute, day);
    await union.consume(key);
    await rejection(union.consume(key));
    expect((await minute.get(key))!.consumedPoints, 'the rejected request was counted in the minute').to.equal(2);
  });

  it('gives a custom Lua script one key and four fixed arguments, and reads back one count', async () => {
    const client = new Redis(server.url);
    const probe = new RateLimiterRedis({
      storeClient: client,
      points: 100,
      duration: 60,
      customIncrTtlLuaScript: 'return {#KEYS, #ARGV}',
    });
    try {
      const result = await probe.consume(key);
      expect([result.consumedPoints, result.msBeforeNext], 'one key; points, duration, limit, duration').to.deep.equal([1, 4]);
    } finally {
      client.disconnect();
    }
  });

  it('blocks the one counter that overflowed, so a ban does not follow the key into the next window', async () => {
    const perMinute = new RateLimiterRedis({ storeClient: redis, keyPrefix: 'strikes', points: 1, duration: 120, blockDuration: 900, blockOnConsumed: 4 });
    await perMinute.consume(`${key}:minute:1`);
    await rejection(perMinute.consume(`${key}:minute:1`));
    await rejection(perMinute.consume(`${key}:minute:1`));
    const ban = (await rejection(perMinute.consume(`${key}:minute:1`))) as RateLimiterRes;
    expect(ban.msBeforeNext, 'blockOnConsumed does give strikes, then a block').to.equal(900_000);
    expect((await perMinute.consume(`${key}:minute:2`)).remainingPoints, 'but the next minute is open').to.equal(0);
  });

  it("answers a key blocked in memory with the memory block's length, not the ban's, and without the reason", async () => {
    const replica = new RateLimiterRedis({
      storeClient: redis,
      keyPrefix: 'banned',
      points: 1,
      duration: 60,
      blockDuration: 900,
      inMemoryBlockOnConsumed: 2,
      inMemoryBlockDuration: 1,
    });
    await replica.consume(key);
    await rejection(replica.consume(key));
    const evals = (await commandCalls(redis)).get('evalsha') ?? 0;
    const cached = (await rejection(replica.consume(key))) as RateLimiterRes;
    expect((await commandCalls(redis)).get('evalsha'), 'answered from memory').to.equal(evals);
    expect(await redis.pttl('banned:' + key)).to.be.above(899_000);
    expect(cached.msBeforeNext, 'Retry-After would say 1 s of a 900 s ban').to.be.at.most(1000);
    expect(cached.consumedPoints, 'banned and limited look alike').to.equal(0);
  });

  it('makes every request wait out the timeout again while Redis hangs, when insuranceLimiter takes over', async () => {
    // Long enough that the count before the pause is Redis's on a busy machine (a reply past it
    // would be counted by the insurance instead), short enough that four waits fit in the pause.
    const client = new Redis(server.url, { commandTimeout: 500, maxRetriesPerRequest: 0 });
    const limiter = new RateLimiterRedis({
      storeClient: client,
      points: 5,
      duration: 60,
      insuranceLimiter: new RateLimiterMemory({ points: 5, duration: 60 }),
    });
    try {
      expect((await limiter.consume(key, 3)).remainingPoints, 'Redis has 3 counted').to.equal(2);
      const before = (await commandCalls(redis)).get('evalsha') ?? 0;
      await redis.call('CLIENT', 'PAUSE', '10000', 'WRITE');
      try {
        for (let i = 0; i < 4; i += 1) expect((await limiter.consume(key)).remainingPoints, 'answered by the insurance, which has none counted').to.equal(4 - i);
      } finally {
        await redis.call('CLIENT', 'UNPAUSE');
      }
      await client.ping();
      expect((await commandCalls(redis)).get('evalsha'), 'each request was sent to the hung Redis first').to.equal(before + 4);
    } finally {
      client.disconnect();
    }
  });
});
