import { status as Status } from '@grpc/grpc-js';
import { type Attributes, type Span, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import {
  ATTR_DB_COLLECTION_NAME,
  ATTR_DB_NAMESPACE,
  ATTR_DB_OPERATION_NAME,
  ATTR_DB_SYSTEM_NAME,
  ATTR_ERROR_TYPE,
} from '@opentelemetry/semantic-conventions';
import { NON_RECORDING_TRACER, startChildSpan } from '@petstore/runtime';
import type { PetServiceMetrics } from '../observability/metrics';
import { PetServiceError } from '../pets/pet-service-error';
import type { IdempotencyClaim } from '../pets/idempotency';
import type { NewPetRecord, PetChange, PetRecord } from '../pets/pet-record';
import type { CreateResult, ListQuery, PetRepository, UpdateResult, VersionCondition } from './pet-repository';

type Operation = 'create' | 'get' | 'list' | 'update' | 'delete' | 'ping';

type Outcome = 'ok' | 'error' | 'cancelled';
const labelsOf = (operation: Operation): Record<Outcome, { operation: Operation; outcome: Outcome }> => ({
  ok: { operation, outcome: 'ok' },
  error: { operation, outcome: 'error' },
  cancelled: { operation, outcome: 'cancelled' },
});
/** Made once: every operation would otherwise allocate its label objects. */
const LABELS = {
  create: labelsOf('create'),
  get: labelsOf('get'),
  list: labelsOf('list'),
  update: labelsOf('update'),
  delete: labelsOf('delete'),
  ping: labelsOf('ping'),
};

/**
 * What a store answers about the pets rather than about itself: an operation refused for one of
 * these went as it should, and is counted `ok` (a change refused for its etag or its transition,
 * a pet not found, an idempotency key taken).
 */
const REFUSALS = new Set([Status.NOT_FOUND, Status.ABORTED, Status.FAILED_PRECONDITION, Status.ALREADY_EXISTS]);

/** The store behind a repository, as database spans name it. */
export interface StoreDescription {
  /** `db.system.name`: `mongodb`, or `memory` for the in-process store. */
  readonly system: string;
  /** `db.namespace`: the database; none for the in-process store. */
  readonly namespace?: string;
}

/** Each operation's `db.operation.name` on the `pets` collection, which every one reads or writes. */
const DB_OPERATIONS: Record<Operation, string> = { create: 'insert', get: 'find', list: 'find', update: 'findAndModify', delete: 'delete', ping: 'ping' };
const PETS_COLLECTION = 'pets';
/** Each operation's span name, `{db.operation.name} {db.collection.name}`; made once. */
const SPAN_NAMES: Record<Operation, string> = {
  create: `${DB_OPERATIONS.create} ${PETS_COLLECTION}`,
  get: `${DB_OPERATIONS.get} ${PETS_COLLECTION}`,
  list: `${DB_OPERATIONS.list} ${PETS_COLLECTION}`,
  update: `${DB_OPERATIONS.update} ${PETS_COLLECTION}`,
  delete: `${DB_OPERATIONS.delete} ${PETS_COLLECTION}`,
  ping: `${DB_OPERATIONS.ping} ${PETS_COLLECTION}`,
};

/**
 * Wraps a store so every operation is counted and timed, by outcome (`cancelled`: a read whose
 * signal aborted it, its caller gone), and knows which are still running: shutdown closes the
 * store only once none is. An operation given the span of the call
 * it serves has a client span of its own under it, when that span is recorded (database semantic
 * conventions: operation, collection, namespace; never a document's contents).
 */
export class InstrumentedRepository implements PetRepository {
  private running = 0;
  private idleWaiters: Array<() => void> = [];
  private readonly spanAttributes: Record<Operation, Attributes>;

  constructor(
    private readonly inner: PetRepository,
    private readonly metrics: PetServiceMetrics,
    private readonly tracer: Tracer = NON_RECORDING_TRACER,
    store: StoreDescription = { system: 'memory' },
  ) {
    const attributesOf = (operation: Operation): Attributes => ({
      [ATTR_DB_SYSTEM_NAME]: store.system,
      ...(store.namespace === undefined ? {} : { [ATTR_DB_NAMESPACE]: store.namespace }),
      [ATTR_DB_COLLECTION_NAME]: PETS_COLLECTION,
      [ATTR_DB_OPERATION_NAME]: DB_OPERATIONS[operation],
    });
    this.spanAttributes = {
      create: attributesOf('create'),
      get: attributesOf('get'),
      list: attributesOf('list'),
      update: attributesOf('update'),
      delete: attributesOf('delete'),
      ping: attributesOf('ping'),
    };
  }

  create(pet: NewPetRecord, idempotency?: IdempotencyClaim, parent?: Span): Promise<CreateResult> {
    return this.observe('create', () => this.inner.create(pet, idempotency), parent);
  }

  get(id: bigint, signal?: AbortSignal, parent?: Span): Promise<PetRecord | undefined> {
    return this.observe('get', () => this.inner.get(id, signal), parent, signal);
  }

  list(query: ListQuery, signal?: AbortSignal, parent?: Span): Promise<PetRecord[]> {
    return this.observe('list', () => this.inner.list(query, signal), parent, signal);
  }

  update(id: bigint, change: PetChange, versions: VersionCondition, idempotency?: IdempotencyClaim, parent?: Span): Promise<UpdateResult> {
    return this.observe('update', () => this.inner.update(id, change, versions, idempotency), parent);
  }

  delete(id: bigint, versions: VersionCondition, parent?: Span): Promise<void> {
    return this.observe('delete', () => this.inner.delete(id, versions), parent);
  }

  ping(): Promise<void> {
    return this.observe('ping', () => this.inner.ping());
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  /** Operations started and not yet settled. */
  get inFlight(): number {
    return this.running;
  }

  /** Resolves once no operation is in flight: at once if none is. */
  idle(): Promise<void> {
    if (this.running === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private async observe<T>(operation: Operation, run: () => Promise<T>, parent?: Span, signal?: AbortSignal): Promise<T> {
    const start = process.hrtime.bigint();
    let outcome: Outcome = 'error';
    const span = parent === undefined ? undefined : startChildSpan(this.tracer, parent, SPAN_NAMES[operation], this.spanAttributes[operation]);
    this.running += 1;
    try {
      const result = await run();
      outcome = 'ok';
      return result;
    } catch (error) {
      if (signal?.aborted === true) outcome = 'cancelled';
      else if (error instanceof PetServiceError && REFUSALS.has(error.code)) outcome = 'ok';
      if (span !== undefined) {
        span.setAttribute(ATTR_ERROR_TYPE, error instanceof PetServiceError ? Status[error.code] ?? 'UNKNOWN' : (error as Error)?.name ?? 'Error');
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      throw error;
    } finally {
      span?.end();
      this.running -= 1;
      if (this.running === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
      const labels = LABELS[operation][outcome];
      this.metrics.storeOperations.inc(labels);
      this.metrics.storeOperationSeconds.observe(labels, Number(process.hrtime.bigint() - start) / 1e9);
    }
  }
}
