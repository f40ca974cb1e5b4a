import { certificateExpirations, CERTIFICATE_EXPIRATION_HELP, type Certificates } from '@petstore/proto';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** The pet service's Prometheus metrics, in a registry of their own (served on the admin port). */
export interface PetServiceMetrics {
  readonly registry: Registry;
  readonly grpcCalls: Counter<'method' | 'code'>;
  readonly grpcCallSeconds: Histogram<'method' | 'code'>;
  readonly storeOperations: Counter<'operation' | 'outcome'>;
  readonly storeOperationSeconds: Histogram<'operation' | 'outcome'>;
  /** TLS handshakes the gRPC listener refused, by reason (grpc/tls-listener.ts). */
  readonly tlsHandshakeRefusals: Counter<'reason'>;
  /**
   * Reads the reads' and the creates' queues at each scrape from now on (until then the gauges
   * read 0). Operations queue, and the overflow is refused with RESOURCE_EXHAUSTED, long before
   * CPU rises: the queues are what an autoscaler should scale on (docs/deploy.md).
   */
  watchLimiters(sources: { readonly reads: OperationQueue; readonly writes: OperationQueue }): void;
  /** Names where the gRPC port's TLS files in force are read at each scrape, for their expiry. */
  readCertificatesWith(read: () => Certificates | undefined): void;
}

/** A concurrency limiter as the metrics read it (store/concurrency-limiter.ts). */
export interface OperationQueue {
  readonly queued: number;
  readonly running: number;
  readonly limit: number;
}

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** Values read at each scrape. */
export interface MetricSources {
  /** Idempotency keys the embedded store remembers; unset for MongoDB, whose TTL index bounds them. */
  readonly idempotencyKeys?: () => number;
}

export function createMetrics(sources: MetricSources = {}): PetServiceMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const { idempotencyKeys } = sources;
  if (idempotencyKeys !== undefined) {
    new Gauge({
      name: 'pet_store_idempotency_keys',
      help: 'Idempotency keys the embedded store remembers (at most IDEMPOTENCY_MAX_KEYS).',
      registers: [registry],
      collect() {
        this.set(idempotencyKeys());
      },
    });
  }
  const idle: OperationQueue = { queued: 0, running: 0, limit: 0 };
  let limiters = { reads: idle, writes: idle };
  const queueGauges = (kind: 'reads' | 'writes', what: string, bound: string): void => {
    new Gauge({
      name: `pet_store_${kind}_queued`,
      help: `${what} waiting for a turn (at most STORE_MAX_QUEUED_${bound}; one more is refused).`,
      registers: [registry],
      collect() {
        this.set(limiters[kind].queued);
      },
    });
    new Gauge({
      name: `pet_store_${kind}_running`,
      help: `${what} running against the store now (at most STORE_MAX_CONCURRENT_${bound}).`,
      registers: [registry],
      collect() {
        this.set(limiters[kind].running);
      },
    });
    new Gauge({
      name: `pet_store_${kind}_limit`,
      help: `${what} allowed to run at once now: STORE_MAX_CONCURRENT_${bound}, or fewer while the store answers slowly.`,
      registers: [registry],
      collect() {
        this.set(limiters[kind].limit);
      },
    });
  };
  queueGauges('reads', 'Reads (ListPets, GetPet)', 'READS');
  queueGauges('writes', 'Creates', 'WRITES');
  let certificates = (): Certificates | undefined => undefined;
  new Gauge({
    name: 'tls_certificate_expiration_timestamp_seconds',
    help: CERTIFICATE_EXPIRATION_HELP,
    labelNames: ['certificate'],
    registers: [registry],
    collect() {
      this.reset();
      for (const { certificate, seconds } of certificateExpirations(certificates())) this.set({ certificate }, seconds);
    },
  });
  return {
    registry,
    watchLimiters: (sources) => {
      limiters = sources;
    },
    readCertificatesWith: (read) => {
      certificates = read;
    },
    grpcCalls: new Counter({
      name: 'grpc_server_handled_total',
      help: 'gRPC calls completed by the server, by method and status code.',
      labelNames: ['method', 'code'],
      registers: [registry],
    }),
    grpcCallSeconds: new Histogram({
      name: 'grpc_server_handling_seconds',
      help: 'Time to answer a gRPC call.',
      labelNames: ['method', 'code'],
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    storeOperations: new Counter({
      name: 'pet_store_operations_total',
      help: 'Store operations, by operation and outcome (ok, error, or cancelled: a read stopped because its caller went away).',
      labelNames: ['operation', 'outcome'],
      registers: [registry],
    }),
    storeOperationSeconds: new Histogram({
      name: 'pet_store_operation_seconds',
      help: 'Time of a store operation.',
      labelNames: ['operation', 'outcome'],
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    tlsHandshakeRefusals: new Counter({
      name: 'grpc_server_tls_handshake_refusals_total',
      help: 'TLS handshakes the gRPC port refused, by reason (no_client_certificate, client_certificate_refused, …).',
      labelNames: ['reason'],
      registers: [registry],
    }),
  };
}
