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
   * Reads the creates' queue at each scrape from now on (until then both gauges read 0). Creates
   * queue, and the overflow is refused with RESOURCE_EXHAUSTED, long before CPU rises: the queue is
   * what an autoscaler should scale on under a write burst (docs/deploy.md).
   */
  watchWrites(source: WriteQueue): void;
}

/** A write limiter as the metrics read it (store/write-limiter.ts). */
export interface WriteQueue {
  readonly queued: number;
  readonly running: number;
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
  let writes: WriteQueue = { queued: 0, running: 0 };
  new Gauge({
    name: 'pet_store_writes_queued',
    help: 'Creates waiting for a turn to write (at most STORE_MAX_QUEUED_WRITES; one more is refused).',
    registers: [registry],
    collect() {
      this.set(writes.queued);
    },
  });
  new Gauge({
    name: 'pet_store_writes_running',
    help: 'Creates writing to the store now (at most STORE_MAX_CONCURRENT_WRITES).',
    registers: [registry],
    collect() {
      this.set(writes.running);
    },
  });
  return {
    registry,
    watchWrites: (source) => {
      writes = source;
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
      help: 'Store operations, by operation and outcome (ok or error).',
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
