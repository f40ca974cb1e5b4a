import { credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import {
  type CreatePetRequest,
  type CreatePetResponse,
  type GetPetRequest,
  type GetPetResponse,
  type ListPetsRequest,
  type ListPetsResponse,
  PetServiceClient,
} from '@petstore/proto';

/** Settings for {@link createPetClient}. */
export interface PetClientOptions {
  /** A gRPC target: `host:port`, or `dns:///name:port` to spread calls over every address. */
  readonly target: string;
  /** Deadline of every call. */
  readonly timeoutMs: number;
}

/** The pet service as the gateway uses it: promise-returning calls, each with a deadline. */
export interface PetClient {
  listPets(request: ListPetsRequest, metadata?: Metadata): Promise<ListPetsResponse>;
  createPet(request: CreatePetRequest, metadata?: Metadata): Promise<CreatePetResponse>;
  getPet(request: GetPetRequest, metadata?: Metadata): Promise<GetPetResponse>;
  close(): void;
}

type Unary<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options: { deadline: number },
  callback: (error: ServiceError | null, response: Res) => void,
) => unknown;

/**
 * One long-lived channel for the process: HTTP/2 multiplexes every call over it, and creating a
 * client per request would pay a connection setup each time.
 */
export function createPetClient(options: PetClientOptions): PetClient {
  const client = new PetServiceClient(options.target, credentials.createInsecure());
  const call =
    <Req, Res>(method: Unary<Req, Res>) =>
    (request: Req, metadata: Metadata = new Metadata()): Promise<Res> =>
      new Promise((resolve, reject) => {
        method.call(client, request, metadata, { deadline: Date.now() + options.timeoutMs }, (error, response) =>
          error ? reject(error) : resolve(response),
        );
      });
  return {
    listPets: call<ListPetsRequest, ListPetsResponse>(client.listPets),
    createPet: call<CreatePetRequest, CreatePetResponse>(client.createPet),
    getPet: call<GetPetRequest, GetPetResponse>(client.getPet),
    close: () => client.close(),
  };
}
