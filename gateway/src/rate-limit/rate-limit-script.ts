/** Reply codes of {@link RATE_LIMIT_LUA}. */
export const SCRIPT_ALLOWED = 0;
export const SCRIPT_LIMITED = 1;
export const SCRIPT_BANNED = 2;

/**
 * Checks the ban, checks every window and, only if all have room, counts the request in all of
 * them, in one atomic round trip. rate-limiter-flexible cannot (rate-limiter-flexible-limits.test.ts):
 * its RateLimiterUnion spends a point in one window while the other rejects
 * (https://github.com/animir/node-rate-limiter-flexible/issues/280), and
 * the script it lets one plug in gets one key and four fixed arguments and returns one count, so the
 * second window, the limits, the ban and the gateway's clock cannot reach it, nor both counts (which
 * the `RateLimit` header reports) come back.
 *
 * KEYS: ban, then per window its counter and its strikes counter (all share one hash tag, so one
 * Redis Cluster slot).
 * ARGV: now (ms, from the gateway's clock so tests control time), ban threshold (0: no ban), ban end
 * (ms), ban length (ms), then per window its limit and its counter's time to live (ms).
 * Reply: {0, 0, counts...} allowed (counts after counting); {1, blocking window (1-based),
 * counts...} limited; {2, ban end} banned.
 *
 * Expiry uses Redis's clock only to reclaim memory; whether a window or ban is current is decided by
 * the keys' window index and the stored ban end against ARGV now.
 */
export const RATE_LIMIT_LUA = `
local now = tonumber(ARGV[1])
local threshold = tonumber(ARGV[2])
local windows = (#KEYS - 1) / 2
if threshold > 0 then
  local ban = tonumber(redis.call('GET', KEYS[1]) or '0')
  if ban > now then return {2, ban} end
end
local counts = {}
local blocking = 0
for i = 1, windows do
  counts[i] = tonumber(redis.call('GET', KEYS[2 * i]) or '0')
  if counts[i] >= tonumber(ARGV[3 + 2 * i]) then blocking = i end
end
if blocking == 0 then
  for i = 1, windows do
    counts[i] = redis.call('INCR', KEYS[2 * i])
    if counts[i] == 1 then redis.call('PEXPIRE', KEYS[2 * i], ARGV[4 + 2 * i]) end
  end
  return {0, 0, unpack(counts)}
end
if threshold > 0 then
  local strikes = redis.call('INCR', KEYS[1 + 2 * blocking])
  if strikes == 1 then redis.call('PEXPIRE', KEYS[1 + 2 * blocking], ARGV[4 + 2 * blocking]) end
  if strikes > threshold then
    redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
    redis.call('DEL', KEYS[1 + 2 * blocking])
    return {2, tonumber(ARGV[3])}
  end
end
return {1, blocking, unpack(counts)}
`;
