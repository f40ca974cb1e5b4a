import { status as Status, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import type { Pet, PetServiceServer } from '@petstore/proto';
import type { PageTokenCodec } from './page-token';
import type { PetRecord, PetRepository } from './pet-repository';
import { PetServiceError } from './pet-service-error';
import { toWireStatus } from './pet-status';
import { validateCreate, validateGet, validateList } from './pet-validation';

/** The PetService implementation: validation, then one repository call per RPC. */
export function createPetServiceHandlers(repository: PetRepository, pageTokens: PageTokenCodec): PetServiceServer {
  return {
    listPets: unary(async (request) => {
      const { pageSize, status } = validateList(request);
      const afterId = request.pageToken === '' ? undefined : pageTokens.decode(request.pageToken, status).afterId;
      // One extra record tells whether another page exists without a count query.
      const records = await repository.list({ status, afterId, limit: pageSize + 1 });
      const page = records.slice(0, pageSize);
      const nextPageToken =
        records.length > pageSize ? pageTokens.encode({ afterId: page[page.length - 1]!.id, status }) : '';
      return { pets: page.map(toWire), nextPageToken };
    }),
    createPet: unary(async (request) => ({ pet: toWire(await repository.create(validateCreate(request))) })),
    getPet: unary(async (request) => {
      const id = validateGet(request);
      const record = await repository.get(id);
      if (record === undefined) throw new PetServiceError(Status.NOT_FOUND, `pet ${id} not found`);
      return { pet: toWire(record) };
    }),
  };
}

function toWire(record: PetRecord): Pet {
  return {
    id: record.id.toString(),
    name: record.name,
    categoryId: record.categoryId.toString(),
    status: toWireStatus(record.status),
  };
}

function unary<Req, Res>(handle: (request: Req) => Promise<Res>) {
  return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>): void => {
    handle(call.request).then(
      (response) => callback(null, response),
      (error: unknown) => callback(PetServiceError.toServiceError(error)),
    );
  };
}
