import type { RequestHandler } from 'express';
import { ApiError } from './api-error';
import type { ApiKey } from './api-keys';
import { identifiedKey } from './authenticate';
import { rateLimitHeaders } from './rate-limit-headers';
import { ipSubject, keyPolicy, keySubject, type RateLimitSettings, unauthenticatedPolicy } from './rate-limit-policy';
import type { RateLimitDecision, RateLimiter, RateLimitPolicy } from './rate-limiter';

export interface RateLimitMiddlewareOptions {
  readonly limiter: RateLimiter;
  readonly settings: RateLimitSettings;
  /** Told every decision: the key's plan (`anonymous` for the per-IP bucket) and the outcome. */
  readonly onDecision?: (plan: string, outcome: RateLimitDecision['outcome']) => void;
}

/**
 * Charges every /v1 request before it is routed: to its API key when {@link createIdentify} found
 * a valid one, otherwise to the client IP (`request.ip`, so `trust proxy` decides whether
 * X-Forwarded-For counts). The headers are set here, before any route runs, so every status that
 * follows (401, 4xx from validation, 5xx from the pet service) carries them.
 */
export function createRateLimit({ limiter, settings, onDecision }: RateLimitMiddlewareOptions): RequestHandler {
  const keyPolicies = new WeakMap<ApiKey, RateLimitPolicy>();
  const ipPolicy = unauthenticatedPolicy(settings.unauthenticatedPerMinute);
  const policyOf = (key: ApiKey): RateLimitPolicy => {
    let policy = keyPolicies.get(key);
    if (policy === undefined) {
      policy = keyPolicy(key.limits, settings.ban);
      keyPolicies.set(key, policy);
    }
    return policy;
  };

  return (request, response, next) => {
    const key = identifiedKey(response.locals);
    const decision =
      key === undefined
        ? limiter.consume(ipSubject(request.ip ?? request.socket.remoteAddress ?? 'unknown'), ipPolicy)
        : limiter.consume(keySubject(key.id), policyOf(key));
    decision.then((result) => {
      onDecision?.(key?.plan ?? 'anonymous', result.outcome);
      response.set(rateLimitHeaders(result));
      if (result.outcome === 'allowed') {
        next();
        return;
      }
      next(refusal(result, key === undefined));
    }, next);
  };
}

function refusal(decision: RateLimitDecision, unauthenticated: boolean): ApiError {
  if (decision.outcome === 'banned') {
    return new ApiError(429, 'api_key_banned', 'API key temporarily banned for repeated requests while rate limited');
  }
  const { limit, seconds } = decision.blocking!.window;
  const per = seconds === 60 ? 'minute' : seconds === 86_400 ? 'day' : `${seconds} s`;
  const message = unauthenticated
    ? `too many requests without a valid API key from this address: ${limit} per ${per}`
    : `rate limit exceeded: ${limit} requests per ${per}`;
  return new ApiError(429, 'rate_limited', message);
}
