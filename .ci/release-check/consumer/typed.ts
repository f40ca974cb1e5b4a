// A strict TypeScript consumer, type-checked (never run) with skipLibCheck off, under
// moduleResolution nodenext (as an ES module) and bundler: every public type must resolve from
// the published declarations, dependencies' included.
import { createPetstoreClient, type Pet, type PetstoreClient, PetstoreError, type RateLimitSnapshot } from '@petstore/client';
import {
  callMetadata,
  type ConnectionState,
  type CreatedPet,
  createPetServiceClient,
  createUnaryTransport,
  fieldViolationOf,
  type FieldViolation,
  PetServiceService,
  PetStatus,
  type PromisePetServiceClient,
  type TransportState,
  type UnaryTransport,
} from '@petstore/proto';
import { Metadata } from '@grpc/grpc-js';
import { BadRequest } from '@petstore/proto/gen/google/rpc/error_details';

export async function http(baseUrl: string, apiKey: string): Promise<bigint> {
  const client: PetstoreClient<'bigint'> = createPetstoreClient({ baseUrl, apiKey, pace: true, retry: { budgetMs: 10_000 } });
  const pet: Pet = await client.createPet({ name: 'Rex', categoryId: 9223372036854775807n });
  const asText = createPetstoreClient({ baseUrl, apiKey, int64: 'string' });
  for await (const other of asText.listPets({ limit: 100, status: 'available' })) {
    const id: string = other.id;
    void id;
  }
  try {
    await client.createPet({ name: '', categoryId: '1' }, { signal: AbortSignal.timeout(1000), idempotencyKey: 'k' });
  } catch (error) {
    if (error instanceof PetstoreError && error.code === 'api_key_banned') {
      const until: Date | undefined = error.bannedUntil;
      void until;
    }
  }
  const limits: RateLimitSnapshot | undefined = client.rateLimit;
  void limits;
  return pet.categoryId;
}

export async function grpc(target: string): Promise<FieldViolation | undefined> {
  const pets: PromisePetServiceClient = createPetServiceClient(target, { callerId: 'svc:billing', deadlineMs: 1000 });
  const created: CreatedPet = await pets.createPet(
    { name: 'Rex', categoryId: '9223372036854775807', status: PetStatus.PET_STATUS_AVAILABLE },
    callMetadata({ requestId: 'r', idempotencyKey: 'k' }),
  );
  const categoryId: string | undefined = created.pet?.categoryId;
  void categoryId;
  const state: TransportState = pets.transport.state();
  const ready: number = pets.transport.connections().ready;
  void state;
  void ready;
  pets.close();
  const transport: UnaryTransport = createUnaryTransport(target, { keepalive: false, backoff: { initialMs: 100 }, proxy: false });
  const bytes0: Buffer = await transport.call(PetServiceService.getPet.path, new Uint8Array([8, 1]), new Metadata(), { deadline: Date.now() + 1000, signal: AbortSignal.timeout(1000) });
  const counts: Readonly<Record<ConnectionState, number>> = transport.connections();
  void bytes0;
  void counts;
  transport.close();
  const bytes: Uint8Array = BadRequest.encode({ fieldViolations: [] }).finish();
  void bytes;
  return fieldViolationOf(undefined);
}
