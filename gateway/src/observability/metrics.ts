import { certificateExpirations, CERTIFICATE_EXPIRATION_HELP, type Certificates, type ConnectionState } from '@petstore/proto';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { keySubject } from '../rate-limit/rate-limit-policy';
import type { RateLimitOutcome, RateLimiter } from '../rate-limit/rate-limiter';

/** The gateway's Prometheus metrics, in a registry of their own (served on the admin port). */
export interface GatewayMetrics {
  readonly registry: Registry;
  readonly httpRequests: Counter<'route' | 'method' | 'status'>;
  readonly httpRequestSeconds: Histogram<'route' | 'method' | 'status'>;
  /** Requests answered 503 because the pet service shed them (its RESOURCE_EXHAUSTED: over capacity). */
  readonly httpRequestsShed: Counter<'route' | 'method'>;
  readonly rateLimitDecisions: Counter<'plan' | 'outcome'>;
  /** The same decisions for the keys of METRICS_KEY_IDS only; see {@link countKeyDecisions}. */
  readonly rateLimitKeyDecisions: Counter<'key_id' | 'outcome'>;
  /** 1 while the limiter runs on its in-memory fallback because Redis is unreachable. */
  readonly rateLimiterFallback: Gauge;
  /**
   * Answers of Redis that waiting will not fix (wrong kind of server, a replica, refused
   * credentials or commands): the limits are not shared until the configuration changes.
   */
  readonly rateLimiterRedisMisconfigurations: Counter;
  /** Per-IP buckets the in-memory limiter holds in the current minute, read at every scrape. */
  readonly rateLimiterAddressBuckets: Gauge;
  /** Names where {@link GatewayMetrics.rateLimiterAddressBuckets} is read; 0 until called. */
  countAddressBucketsWith(count: () => number): void;
  /** Counting processes each limit is split over while Redis is out (1: not split), read at every scrape. */
  readonly rateLimiterFallbackReplicas: Gauge;
  /** Names where {@link GatewayMetrics.rateLimiterFallbackReplicas} is read; 1 until called. */
  countFallbackReplicasWith(count: () => number): void;
  readonly grpcClientCalls: Counter<'method' | 'code'>;
  readonly grpcClientCallSeconds: Histogram<'method' | 'code'>;
  /** Names where the pet service client's connections by state are read at each scrape (`grpc_client_connections`). */
  countConnectionsWith(count: () => Readonly<Record<ConnectionState, number>>): void;
  /**
   * 1 when the pet service answered SERVING to a health check made at this scrape, else 0: the
   * one signal of "no ready pet service" that needs no traffic, since a gateway without one is
   * taken out of rotation and then sees no request to fail.
   */
  readonly petServiceServing: Gauge;
  /** Names the check {@link GatewayMetrics.petServiceServing} makes at each scrape; it reads 0 until called. */
  checkPetServiceWith(check: () => Promise<void>): void;
  /** Key ids in the active keys file, expired and revoked ones included. */
  readonly apiKeysLoaded: Gauge;
  /** Reloads of the keys file, by outcome: a rejected file leaves the last good keys in force. */
  readonly apiKeysReloads: Counter<'outcome'>;
  readonly apiKeysLastReloadSuccess: Gauge;
  /** 0 from a rejected reload of the keys file until the next good one, else 1. */
  readonly apiKeysLastReloadSuccessful: Gauge;
  /** Names where the pet service client's TLS files in force are read at each scrape, for their expiry. */
  readCertificatesWith(read: () => Certificates | undefined): void;
}

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

export function createMetrics(): GatewayMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  let addressBuckets = (): number => 0;
  let fallbackReplicas = (): number => 1;
  let petServiceCheck: () => Promise<void> = () => Promise.reject(new Error('no pet service check yet'));
  let certificates = (): Certificates | undefined => undefined;
  let connections = (): Readonly<Record<ConnectionState, number>> | undefined => undefined;
  new Gauge({
    name: 'grpc_client_connections',
    help: 'HTTP/2 connections of the pet service client, by state: idle, connecting, ready, transient_failure (failing, retried with backoff), draining (GOAWAY received or the address gone; its calls finish).',
    labelNames: ['state'],
    // With GATEWAY_WORKERS: every worker has its own connections.
    aggregator: 'sum',
    registers,
    collect() {
      const counts = connections();
      if (counts === undefined) return;
      for (const state of CONNECTION_STATES) this.set({ state }, counts[state]);
    },
  });
  new Gauge({
    name: 'tls_certificate_expiration_timestamp_seconds',
    help: CERTIFICATE_EXPIRATION_HELP,
    labelNames: ['certificate'],
    // With GATEWAY_WORKERS: the worker whose certificate expires first.
    aggregator: 'min',
    registers,
    collect() {
      this.reset();
      for (const { certificate, seconds } of certificateExpirations(certificates())) this.set({ certificate }, seconds);
    },
  });
  return {
    registry,
    httpRequests: new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests answered, by route template, method and status.',
      labelNames: ['route', 'method', 'status'],
      registers,
    }),
    httpRequestSeconds: new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time to answer an HTTP request.',
      labelNames: ['route', 'method', 'status'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    httpRequestsShed: new Counter({
      name: 'http_requests_shed_total',
      help: 'Requests answered 503 with Retry-After because the pet service was over capacity and shed them, by route template and method.',
      labelNames: ['route', 'method'],
      registers,
    }),
    rateLimitDecisions: new Counter({
      name: 'rate_limit_decisions_total',
      help: 'Rate-limit decisions, by plan (or "anonymous" for the per-IP limit) and outcome.',
      labelNames: ['plan', 'outcome'],
      registers,
    }),
    rateLimitKeyDecisions: new Counter({
      name: 'rate_limit_key_decisions_total',
      help: 'Rate-limit decisions for the API keys listed in METRICS_KEY_IDS, by key id and outcome; other keys are counted by plan only.',
      labelNames: ['key_id', 'outcome'],
      registers,
    }),
    rateLimiterFallback: new Gauge({
      name: 'rate_limiter_fallback',
      help: '1 while limits are kept in memory because Redis is unreachable, else 0.',
      // With GATEWAY_WORKERS the primary combines the workers' values: 1 if any worker falls back.
      aggregator: 'max',
      registers,
    }),
    rateLimiterRedisMisconfigurations: new Counter({
      name: 'rate_limiter_redis_misconfigurations_total',
      help: 'Errors from Redis that mean its configuration is wrong (MOVED on REDIS_URL, READONLY, unknown command, refused credentials); limits are per replica meanwhile.',
      registers,
    }),
    rateLimiterAddressBuckets: new Gauge({
      name: 'rate_limiter_memory_address_buckets',
      help: 'Per-IP buckets counted in this process in the current minute, the shared overflow bucket included; UNAUTHENTICATED_MAX_ADDRESSES + 1 at most.',
      registers,
      collect() {
        this.set(addressBuckets());
      },
    }),
    grpcClientCalls: new Counter({
      name: 'grpc_client_handled_total',
      help: 'gRPC calls to the pet service, by method and status code.',
      labelNames: ['method', 'code'],
      registers,
    }),
    grpcClientCallSeconds: new Histogram({
      name: 'grpc_client_handling_seconds',
      help: 'Time of a gRPC call to the pet service, retries included.',
      labelNames: ['method', 'code'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    countAddressBucketsWith(count) {
      addressBuckets = count;
    },
    rateLimiterFallbackReplicas: new Gauge({
      name: 'rate_limiter_fallback_replicas',
      help: 'Counting processes (gateway replicas times workers) each limit is split over while Redis is out, from the heartbeat in Redis; 1 with RATE_LIMIT_FALLBACK=full or without Redis.',
      // With GATEWAY_WORKERS every worker reads the same heartbeat; the primary reports the largest.
      aggregator: 'max',
      registers,
      collect() {
        this.set(fallbackReplicas());
      },
    }),
    countFallbackReplicasWith(count) {
      fallbackReplicas = count;
    },
    petServiceServing: new Gauge({
      name: 'pet_service_serving',
      help: 'Whether the pet service answered SERVING to a health check made at this scrape, through the connections the calls use (1), or not (0): some replica is ready and reaches its store.',
      // With GATEWAY_WORKERS: 0 if any worker finds none.
      aggregator: 'min',
      registers,
      async collect() {
        this.set(await petServiceCheck().then(
          () => 1,
          () => 0,
        ));
      },
    }),
    checkPetServiceWith(check) {
      petServiceCheck = check;
    },
    apiKeysLoaded: new Gauge({
      name: 'api_keys_loaded',
      help: 'API keys (ids) in the keys file in force, expired and revoked ones included.',
      aggregator: 'max',
      registers,
    }),
    apiKeysReloads: new Counter({
      name: 'api_keys_reloads_total',
      help: 'Reloads of the keys file, by outcome (success, failure: the last good keys stay in force).',
      labelNames: ['outcome'],
      registers,
    }),
    apiKeysLastReloadSuccess: new Gauge({
      name: 'api_keys_last_reload_success_timestamp_seconds',
      help: 'When the keys file in force was loaded, at start-up or on a reload (Unix time).',
      // With GATEWAY_WORKERS: the stalest worker's, so one that missed a change does not hide.
      aggregator: 'min',
      registers,
    }),
    apiKeysLastReloadSuccessful: new Gauge({
      name: 'api_keys_last_reload_successful',
      help: 'Whether the last change of the keys file was put in force (1), or rejected, the last good keys staying in force (0).',
      // With GATEWAY_WORKERS: 0 if any worker rejected the file.
      aggregator: 'min',
      registers,
    }),
    readCertificatesWith(read) {
      certificates = read;
    },
    countConnectionsWith(count) {
      connections = count;
    },
  };
}

const CONNECTION_STATES: readonly ConnectionState[] = ['idle', 'connecting', 'ready', 'transient_failure', 'draining'];

const OUTCOMES: readonly RateLimitOutcome[] = ['allowed', 'limited', 'banned'];

/**
 * `limiter`, counting its decisions by key id for `keyIds` only (METRICS_KEY_IDS): a label per key
 * of a large keys file would give Prometheus a series per key and outcome, so the operator names
 * the few keys worth a dashboard, and the rest are counted by plan. Every listed key starts with a
 * 0 per outcome, so a rate over it is defined before its first request. With no ids, `limiter`
 * itself is returned.
 */
export function countKeyDecisions(limiter: RateLimiter, metrics: Pick<GatewayMetrics, 'rateLimitKeyDecisions'>, keyIds: readonly string[]): RateLimiter {
  if (keyIds.length === 0) return limiter;
  const counted = new Map(keyIds.map((id) => [keySubject(id), id]));
  for (const id of keyIds) for (const outcome of OUTCOMES) metrics.rateLimitKeyDecisions.inc({ key_id: id, outcome }, 0);
  return {
    async consume(subject, policy) {
      const decision = await limiter.consume(subject, policy);
      const id = counted.get(subject);
      if (id !== undefined) metrics.rateLimitKeyDecisions.inc({ key_id: id, outcome: decision.outcome });
      return decision;
    },
    usage: (subject, policy) => limiter.usage(subject, policy),
    unban: (subject) => limiter.unban(subject),
    close: () => limiter.close(),
  };
}
