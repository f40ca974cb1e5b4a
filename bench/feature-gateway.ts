/**
 * The gateway for `npm run bench`'s feature costs (BENCH_FEATURE_COSTS=1): the same app as
 * `gateway/src/main.ts` with the in-memory limiter, with the features named in `BENCH_WITHOUT`
 * (comma-separated: limiter, logging, metrics, tracing) replaced through the app's own options, so
 * that each one's CPU per request is the difference from a run with all of them: a limiter that
 * admits every request without counting, a logger above the request lines' level, no metrics, a
 * tracer whose every span is the invalid one (no ids made, no trace context sent; the log line keeps
 * its zero ids). Never a way to deploy the gateway.
 */
import { INVALID_SPAN_CONTEXT, trace, type Tracer } from '@opentelemetry/api';
import { createLogger } from '@petstore/runtime';
import { createApp } from '../gateway/src/app';
import { ApiKeyStore } from '../gateway/src/keys/api-keys';
import { DEFAULT_CONNECTION_LIMITS, listen } from '../gateway/src/http/http-server';
import { createMetrics } from '../gateway/src/observability/metrics';
import { createPetClient } from '../gateway/src/pet-service-client/pet-client';
import { MemoryRateLimiter } from '../gateway/src/rate-limit/memory-rate-limiter';
import { decide, type RateLimiter, usageOf } from '../gateway/src/rate-limit/rate-limiter';

/** Admits every request and counts none: what the gateway would cost with no limiter at all. */
const ADMIT_ALL: RateLimiter = {
  consume: (_subject, policy) => Promise.resolve(decide(policy, Date.now(), [], undefined)),
  usage: (_subject, policy) => Promise.resolve(usageOf('replica', policy, Date.now(), [], undefined)),
  unban: () => Promise.resolve(false),
  close: () => Promise.resolve(),
};

/** Gives every span the invalid context: the front door still asks for one, and gets it for nothing. */
const NO_TRACING: Tracer = {
  startSpan: () => trace.wrapSpanContext(INVALID_SPAN_CONTEXT),
  startActiveSpan: () => {
    throw new Error('not used by the gateway');
  },
};

const FEATURES = ['limiter', 'logging', 'metrics', 'tracing'] as const;
const without = new Set((process.env.BENCH_WITHOUT ?? '').split(',').filter((name) => name !== ''));
for (const name of without) {
  if (!(FEATURES as readonly string[]).includes(name)) throw new Error(`BENCH_WITHOUT: unknown feature ${name}; known: ${FEATURES.join(', ')}`);
}

async function main(): Promise<void> {
  // The request lines are written at info: warn leaves the logger in place and silences them.
  const logger = createLogger({ service: 'gateway', level: without.has('logging') ? 'warn' : 'info', pretty: false });
  const metrics = without.has('metrics') ? undefined : createMetrics();
  const petClient = createPetClient({ target: process.env.PET_SERVICE_ADDR!, timeoutMs: 2000, metrics });
  const app = createApp({
    petClient,
    apiKeys: ApiKeyStore.load(process.env.API_KEYS_FILE!),
    logger,
    metrics,
    limiter: without.has('limiter') ? ADMIT_ALL : new MemoryRateLimiter({ now: Date.now }),
    rateLimits: { unauthenticatedPerMinute: 60, ban: { threshold: 1e9, seconds: 900 } },
    ...(without.has('tracing') ? { tracer: NO_TRACING } : {}),
  });
  const { port } = await listen(app, '127.0.0.1', 0, DEFAULT_CONNECTION_LIMITS);
  // Written past the logger, which 'warn' may silence: the harness waits for this line.
  console.log(JSON.stringify({ msg: 'bench gateway listening', port, adminPort: 0, without: [...without] }));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
