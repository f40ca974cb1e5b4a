import { Server, ServerCredentials } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { PET_SERVICE_PROTO, PetServiceService, PROTO_ROOT } from '@petstore/proto';
import { HealthImplementation, type ServingStatusMap } from 'grpc-health-check';
import { PageTokenCodec } from './page-token';
import type { PetRepository } from './pet-repository';
import { createPetServiceHandlers } from './pet-service-handlers';

/** What {@link createServer} needs; everything comes from the caller, nothing from the environment. */
export interface ServerOptions {
  readonly host: string;
  /** 0 picks a free port (tests). */
  readonly port: number;
  readonly repository: PetRepository;
  readonly pageTokenSecret: string;
}

export interface RunningServer {
  readonly port: number;
  readonly health: HealthImplementation;
  /** Stops taking calls, lets in-flight calls finish, then closes the repository. */
  shutdown(): Promise<void>;
}

/** Fully-qualified name under which health reports the pet service ('' is the whole server). */
export const PET_SERVICE_NAME = 'petstore.v1.PetService';

/** Starts the gRPC server with the pet service, health checking and server reflection. */
export async function createServer(options: ServerOptions): Promise<RunningServer> {
  const server = new Server();
  server.addService(PetServiceService, createPetServiceHandlers(options.repository, new PageTokenCodec(options.pageTokenSecret)));

  const statusMap: ServingStatusMap = { '': 'SERVING', [PET_SERVICE_NAME]: 'SERVING' };
  const health = new HealthImplementation(statusMap);
  health.addToServer(server);

  const definition = loadSync(PET_SERVICE_PROTO, { includeDirs: [PROTO_ROOT], longs: String, enums: String });
  new ReflectionService(definition).addToServer(server);

  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${options.host}:${options.port}`, ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    );
  });

  return {
    port,
    health,
    async shutdown() {
      health.setStatus('', 'NOT_SERVING');
      health.setStatus(PET_SERVICE_NAME, 'NOT_SERVING');
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      await options.repository.close();
    },
  };
}
