import { Metadata, Server, ServerCredentials, status as Status, type ServiceError } from '@grpc/grpc-js';
import { type CreatePetResponse, type GetPetResponse, type ListPetsResponse, PetServiceService, RETRY_PUSHBACK_METADATA } from '@petstore/proto';

/** What a scripted call answers: a response, or a gRPC status to fail with (and a retry pushback to send with it). */
export type Answer<Res> = Res | { fail: Status; pushbackMs?: string };

export interface ScriptedPetService {
  readonly port: number;
  /** Calls received so far, by method. */
  readonly calls: { listPets: number; createPet: number; getPet: number };
  close(): Promise<void>;
}

/** Per method, what the n-th call answers; a method left out answers UNIMPLEMENTED. */
export interface Script {
  listPets?: (attempt: number) => Answer<ListPetsResponse> | Promise<Answer<ListPetsResponse>>;
  createPet?: (attempt: number) => Answer<CreatePetResponse> | Promise<Answer<CreatePetResponse>>;
  getPet?: (attempt: number) => Answer<GetPetResponse> | Promise<Answer<GetPetResponse>>;
}

/**
 * A real gRPC server speaking petstore.v1 whose answers a test scripts: to hold calls in flight,
 * or to fail them with a chosen status. For the gateway's failure-handling tests, where the real
 * pet service cannot be made to misbehave on cue.
 */
export async function startScriptedPetService(script: Script): Promise<ScriptedPetService> {
  const calls = { listPets: 0, createPet: 0, getPet: 0 };
  const server = new Server();
  const answer =
    <Res>(method: keyof Script) =>
    (_call: unknown, callback: (error: Partial<ServiceError> | null, response?: Res) => void): void => {
      calls[method] += 1;
      const run = script[method] as ((attempt: number) => Answer<Res> | Promise<Answer<Res>>) | undefined;
      void Promise.resolve(run === undefined ? { fail: Status.UNIMPLEMENTED } : run(calls[method])).then((result) => {
        if (typeof result === 'object' && result !== null && 'fail' in result) {
          const metadata = new Metadata();
          if (result.pushbackMs !== undefined) metadata.set(RETRY_PUSHBACK_METADATA, result.pushbackMs);
          callback({ code: result.fail, details: 'scripted', metadata });
        } else callback(null, result as Res);
      });
    };
  server.addService(PetServiceService, {
    listPets: answer<ListPetsResponse>('listPets'),
    createPet: answer<CreatePetResponse>('createPet'),
    getPet: answer<GetPetResponse>('getPet'),
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  return { port, calls, close: () => new Promise((resolve) => server.tryShutdown(() => resolve())) };
}
