import { Metadata, status as Status, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import {
  IDEMPOTENT_REPLAYED_METADATA,
  InvalidUtf8Error,
  type Pet,
  type PetServiceServer,
  REQUEST_ID_METADATA,
  REQUEST_ID_PATTERN,
} from '@petstore/proto';
import type { Logger } from 'pino';
import type { PetServiceMetrics } from '../observability/metrics';
import type { PageTokenCodec } from '../pets/page-token';
import type { PetRecord } from '../pets/pet-record';
import type { PetRepository } from '../store/pet-repository';
import type { WriteLimiter } from '../store/write-limiter';
import { idempotencyClaimOf } from '../pets/idempotency';
import { PetServiceError } from '../pets/pet-service-error';
import { toWireStatus } from '../pets/pet-status';
import { validateCreate, validateGet, validateList } from '../pets/pet-validation';

/**
 * What {@link tolerantDeserialize} yields for bytes that are not a valid message, so the handler
 * can answer INVALID_ARGUMENT saying why; grpc-js itself would answer INTERNAL.
 */
export class Undecodable {
  constructor(readonly problem: string) {}
}

/**
 * Wraps a message decoder so that undecodable input becomes an {@link Undecodable}, not a throw.
 * Give it a strict one (`strictUtf8Decoder`), so that text that is not valid UTF-8 is refused,
 * never stored with U+FFFD in place of its bytes.
 */
export function tolerantDeserialize<T>(decode: (bytes: Buffer) => T): (bytes: Buffer) => T | Undecodable {
  return (bytes) => {
    try {
      return decode(bytes);
    } catch (error) {
      return new Undecodable(error instanceof InvalidUtf8Error ? error.message : 'is not a valid protobuf message');
    }
  };
}

export interface HandlerDependencies {
  readonly repository: PetRepository;
  /** Every create passes it; a full queue answers RESOURCE_EXHAUSTED. */
  readonly writes: WriteLimiter;
  readonly pageTokens: PageTokenCodec;
  readonly logger: Logger;
  readonly metrics: PetServiceMetrics;
  /**
   * Aborted when a forced shutdown cancels the calls still running: their store operations then
   * fail as the store closes, possibly before grpc-js has marked each call cancelled.
   */
  readonly forcedShutdown: AbortSignal;
  /**
   * A call that succeeds in less than this many ms is logged at debug, not info: the line is a
   * large share of a fast call's CPU, and the gateway already logs every request with the same
   * request id. 0 logs every call at info.
   */
  readonly slowCallMs: number;
  /** Monotonic time in ns (`process.hrtime.bigint`); calls are timed with it. */
  readonly clock: () => bigint;
}

/** The PetService implementation: validation, then one repository call per RPC. */
export function createPetServiceHandlers({
  repository,
  writes,
  pageTokens,
  logger,
  metrics,
  forcedShutdown,
  slowCallMs,
  clock,
}: HandlerDependencies): PetServiceServer {
  const unary = <Req, Res>(method: string, handle: (request: Req, call: ServerUnaryCall<Req, Res>) => Promise<Res>) => {
    // One label object per status code, made once rather than twice per call.
    const labels = new Map<Status, { method: string; code: string }>();
    const labelsOf = (code: Status) => {
      let found = labels.get(code);
      if (found === undefined) labels.set(code, (found = { method, code: Status[code]! }));
      return found;
    };
    return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>): void => {
      const start = clock();
      const finish = (code: Status, error?: unknown): void => {
        const ms = Number(clock() - start) / 1e6;
        const callLabels = labelsOf(code);
        metrics.grpcCalls.inc(callLabels);
        metrics.grpcCallSeconds.observe(callLabels, ms / 1000);
        // The line is built only when some level will write it.
        if (code === Status.INTERNAL || code === Status.UNKNOWN) {
          logger.error({ ...callLine(method, callLabels.code, ms, call.metadata), err: error }, 'grpc call failed');
        } else if (code !== Status.OK || ms >= slowCallMs) {
          logger.info(callLine(method, callLabels.code, ms, call.metadata), 'grpc call');
        } else if (logger.isLevelEnabled('debug')) {
          logger.debug(callLine(method, callLabels.code, ms, call.metadata), 'grpc call');
        }
      };
      const request: Req = call.request;
      const handled =
        (request as unknown) instanceof Undecodable
          ? Promise.reject(PetServiceError.invalidArgument('request', (request as Undecodable).problem))
          : handle(request, call);
      handled.then(
        (response) => {
          if (call.cancelled || forcedShutdown.aborted) return finish(Status.CANCELLED);
          finish(Status.OK);
          callback(null, response);
        },
        (error: unknown) => {
          // Cancelled by its client or by a forced shutdown, which may close the store under it:
          // what the store operation then met is no fault of the service.
          if (call.cancelled || forcedShutdown.aborted) return finish(Status.CANCELLED);
          const serviceError = PetServiceError.toServiceError(error);
          finish(serviceError.code!, error);
          callback(serviceError);
        },
      );
    };
  };

  return {
    listPets: unary('ListPets', async (request) => {
      const { pageSize, status } = validateList(request);
      const afterId = request.pageToken === '' ? undefined : pageTokens.decode(request.pageToken, status).afterId;
      // One extra record tells whether another page exists without a count query.
      const records = await repository.list({ status, afterId, limit: pageSize + 1 });
      const page = records.slice(0, pageSize);
      const nextPageToken =
        records.length > pageSize ? pageTokens.encode({ afterId: page[page.length - 1]!.id, status }) : '';
      return { pets: page.map(toWire), nextPageToken };
    }),
    createPet: unary('CreatePet', async (request, call) => {
      const pet = validateCreate(request);
      const claim = idempotencyClaimOf(call.metadata, pet);
      const created = await writes.run(() => repository.create(pet, claim), call);
      if (created.replayed) call.sendMetadata(replayedMetadata());
      return { pet: toWire(created.pet) };
    }),
    getPet: unary('GetPet', async (request) => {
      const id = validateGet(request);
      const record = await repository.get(id);
      if (record === undefined) throw new PetServiceError(Status.NOT_FOUND, `pet ${id} not found`);
      return { pet: toWire(record) };
    }),
  };
}

function replayedMetadata(): Metadata {
  const metadata = new Metadata();
  metadata.set(IDEMPOTENT_REPLAYED_METADATA, 'true');
  return metadata;
}

function callLine(method: string, code: string, duration: number, metadata: Metadata) {
  return { method, code, duration, requestId: requestIdOf(metadata) };
}

/** The caller's request id when it is sane by the gateway's rule; anything else is not logged. */
function requestIdOf(metadata: Metadata): string | undefined {
  const value = metadata.get(REQUEST_ID_METADATA)[0];
  return typeof value === 'string' && REQUEST_ID_PATTERN.test(value) ? value : undefined;
}

function toWire(record: PetRecord): Pet {
  return {
    id: record.id.toString(),
    name: record.name,
    categoryId: record.categoryId.toString(),
    status: toWireStatus(record.status),
  };
}
