/**
 * The pet service's floor for `npm run bench:pet-service` (`BENCH_PET_FLOOR=1`): grpc-js's server
 * with the generated service definition, answering ListPets with a page of 20 built once, and
 * CreatePet (the harness seeds every side) with a fixed pet. No store, validation, page token,
 * metrics or log: what any pet service on grpc-js pays per call.
 */
import { Server, ServerCredentials, status as Status } from '@grpc/grpc-js';
import { type ListPetsResponse, type Pet, type PetServiceServer, PetServiceService } from '@petstore/proto';

const PETS: Pet[] = Array.from({ length: 20 }, (_, index) => ({
  id: String(index + 1),
  name: `pet-${index}`,
  categoryId: String(1 + (index % 50)),
  status: 1 + (index % 3),
  etag: '',
}));
const PAGE: ListPetsResponse = { pets: PETS, nextPageToken: 'djEuYWxsLjIwbegCS9DMlKE6IBXK' };

const server = new Server();
const handlers: PetServiceServer = {
  listPets: (_call, callback) => callback(null, PAGE),
  createPet: (_call, callback) => callback(null, { pet: PETS[0] }),
  getPet: (_call, callback) => callback({ code: Status.UNIMPLEMENTED, details: 'not in the floor' }),
  updatePet: (_call, callback) => callback({ code: Status.UNIMPLEMENTED, details: 'not in the floor' }),
  deletePet: (_call, callback) => callback({ code: Status.UNIMPLEMENTED, details: 'not in the floor' }),
};
server.addService(PetServiceService, handlers);
server.bindAsync(`127.0.0.1:${process.env.PET_SERVICE_PORT ?? '0'}`, ServerCredentials.createInsecure(), (error, port) => {
  if (error) throw error;
  console.log(JSON.stringify({ msg: 'pet service floor listening', port, adminPort: 0 }));
});
process.once('SIGTERM', () => server.tryShutdown(() => process.exit(0)));
