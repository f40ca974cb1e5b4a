import { MemoryRateLimiter } from '../../../src/rate-limit/memory-rate-limiter';
import { rateLimiterContract } from './rate-limiter-contract';

rateLimiterContract('MemoryRateLimiter', async (now) => {
  const limiter = new MemoryRateLimiter({ now });
  return { limiter, close: () => limiter.close() };
});
