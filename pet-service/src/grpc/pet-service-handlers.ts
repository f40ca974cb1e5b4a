/** The PetService RPCs: validation, then one repository call each. */
import { Metadata, status as Status } from '@grpc/grpc-js';
import { IDEMPOTENT_REPLAYED_METADATA, type PetServiceServer } from '@petstore/proto';
import type { PageTokenCodec } from '../pets/page-token';
import type { InstrumentedRepository } from '../store/instrumented-repository';
import type { ConcurrencyLimiter, LimitedCaller } from '../store/concurrency-limiter';
import { changeIdempotencyClaim, idempotencyClaim, idempotencyKeyOf } from '../pets/idempotency';
import { PetServiceError } from '../pets/pet-service-error';
import { validateCreate, validateDelete, validateGet, validateList, validateUpdate } from '../pets/pet-validation';
import { StoredPetsPage, toWire } from './list-pets-serializer';
import { createUnaryCall, type UnaryCallDependencies } from './unary-call';

export interface HandlerDependencies extends UnaryCallDependencies {
  /** The store, each operation a child of its call's span. */
  readonly repository: InstrumentedRepository;
  /** Every read (ListPets, GetPet) passes it; a full queue answers RESOURCE_EXHAUSTED. */
  readonly reads: ConcurrencyLimiter;
  /** Every create, change and delete passes it; a full queue answers RESOURCE_EXHAUSTED. */
  readonly writes: ConcurrencyLimiter;
  readonly pageTokens: PageTokenCodec;
}

/** The PetService implementation: validation, then one repository call per RPC. */
export function createPetServiceHandlers({
  repository,
  reads,
  writes,
  pageTokens,
  ...callDependencies
}: HandlerDependencies): PetServiceServer {
  const unary = createUnaryCall(callDependencies);
  return {
    listPets: unary('ListPets', async (request, call, span) => {
      // Every invalid field at once; a token valid in itself is then checked against the filter.
      const [{ pageSize, status }, issued] = PetServiceError.allValid(
        () => validateList(request),
        () => (request.pageToken === '' ? undefined : pageTokens.read(request.pageToken)),
      );
      const afterId = issued === undefined ? undefined : pageTokens.resume(issued, status).afterId;
      // One extra record tells whether another page exists without a count query.
      const query = { status, afterId, limit: pageSize + 1 };
      const records = await reads.run(() => whileLive(call, (signal) => repository.list(query, signal, span)), call);
      if (records.length <= pageSize) return new StoredPetsPage(records, '');
      const page = records.slice(0, pageSize);
      return new StoredPetsPage(page, pageTokens.encode({ afterId: page[pageSize - 1]!.id, status }));
    }),
    createPet: unary('CreatePet', async (request, call, span) => {
      // Every invalid field at once: the request's, then its idempotency metadata's.
      const [pet, key] = PetServiceError.allValid(
        () => validateCreate(request),
        () => idempotencyKeyOf(call.metadata),
      );
      const claim = key === undefined ? undefined : idempotencyClaim(key, pet);
      const created = await writes.run(() => repository.create(pet, claim, span), call);
      if (created.replayed) call.sendMetadata(replayedMetadata());
      return { pet: toWire(created.pet) };
    }),
    getPet: unary('GetPet', async (request, call, span) => {
      const id = validateGet(request);
      const record = await reads.run(() => whileLive(call, (signal) => repository.get(id, signal, span)), call);
      if (record === undefined) throw PetServiceError.notFound(id);
      return { pet: toWire(record) };
    }),
    updatePet: unary('UpdatePet', async (request, call, span) => {
      // Every invalid field at once: the request's, then its idempotency metadata's.
      const [update, key] = PetServiceError.allValid(
        () => validateUpdate(request),
        () => idempotencyKeyOf(call.metadata),
      );
      const claim = key === undefined ? undefined : changeIdempotencyClaim(key, update, request.etag);
      const updated = await writes.run(() => repository.update(update.id, update.change, update.versions, claim, span), call);
      if (updated.replayed) call.sendMetadata(replayedMetadata());
      return { pet: toWire(updated.pet) };
    }),
    deletePet: unary('DeletePet', async (request, call, span) => {
      const { id, versions } = validateDelete(request);
      await writes.run(() => repository.delete(id, versions, span), call);
      return {};
    }),
  };
}

/**
 * Runs `read` with a signal aborted when `call` is cancelled while it runs: its client cancelled it
 * or went away, or its deadline passed (grpc-js cancels the call then, too). Made when the read
 * starts, after its wait for a turn. The listener goes when the read ends: grpc-js reports every
 * call cancelled once its stream closes, answered or not, and an abort then would build an error
 * (its stack captured) for a read long finished, on every call.
 */
async function whileLive<T>(call: LimitedCaller, read: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const abort = (): void => controller.abort(new PetServiceError(Status.CANCELLED, 'cancelled while reading'));
  if (call.cancelled) abort();
  else call.once('cancelled', abort);
  try {
    return await read(controller.signal);
  } finally {
    call.removeListener('cancelled', abort);
  }
}

function replayedMetadata(): Metadata {
  const metadata = new Metadata();
  metadata.set(IDEMPOTENT_REPLAYED_METADATA, 'true');
  return metadata;
}
