import { type Channel, credentials, Metadata, status as Status, type ServiceError } from '@grpc/grpc-js';
import {
  type CreatePetRequest,
  type CreatePetResponse,
  IDEMPOTENT_REPLAYED_METADATA,
  type GetPetRequest,
  type GetPetResponse,
  type ListPetsRequest,
  type ListPetsResponse,
  PET_SERVICE_NAME,
  PetServiceClient,
} from '@petstore/proto';
import type { GatewayMetrics } from '../observability/metrics';

/** Settings for {@link createPetClient}. */
export interface PetClientOptions {
  /**
   * A gRPC target: `host:port`, or `dns:///name:port` (a headless Service) to spread calls over
   * every address with round_robin.
   */
  readonly target: string;
  /** Deadline of every call, retries included. */
  readonly timeoutMs: number;
  readonly metrics?: GatewayMetrics;
}

/** A create's answer, and whether it replays an earlier create with the same idempotency key. */
export interface CreatedPet extends CreatePetResponse {
  readonly replayed: boolean;
}

/** The pet service as the gateway uses it: promise-returning calls, each with a deadline. */
export interface PetClient {
  listPets(request: ListPetsRequest, metadata?: Metadata): Promise<ListPetsResponse>;
  createPet(request: CreatePetRequest, metadata?: Metadata): Promise<CreatedPet>;
  getPet(request: GetPetRequest, metadata?: Metadata): Promise<GetPetResponse>;
  /** The underlying channel, for other clients of the same service (health checks) to share. */
  readonly channel: Channel;
  close(): void;
}

type Unary<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options: { deadline: number },
  callback: (error: ServiceError | null, response: Res) => void,
) => { on(event: 'metadata', listener: (metadata: Metadata) => void): unknown };

/**
 * Reads are idempotent, so grpc-js retries them on UNAVAILABLE with backoff (within the call's
 * deadline). CreatePet is never retried: a create that reached the store but lost its answer
 * would be made twice. round_robin spreads calls over every resolved address: one HTTP/2
 * connection would otherwise pin all traffic to one replica behind a layer-4 Service.
 */
export const SERVICE_CONFIG = {
  loadBalancingConfig: [{ round_robin: {} }],
  methodConfig: [
    {
      name: [
        { service: PET_SERVICE_NAME, method: 'ListPets' },
        { service: PET_SERVICE_NAME, method: 'GetPet' },
      ],
      retryPolicy: {
        maxAttempts: 4,
        initialBackoff: '0.05s',
        maxBackoff: '0.5s',
        backoffMultiplier: 2,
        retryableStatusCodes: ['UNAVAILABLE'],
      },
    },
  ],
};

/**
 * One long-lived channel for the process: HTTP/2 multiplexes every call over it, and creating a
 * client per request would pay a connection setup each time.
 */
export function createPetClient(options: PetClientOptions): PetClient {
  const client = new PetServiceClient(options.target, credentials.createInsecure(), {
    'grpc.service_config': JSON.stringify(SERVICE_CONFIG),
    'grpc.enable_retries': 1,
    // Reconnect quickly once a restarted pet service is back.
    'grpc.initial_reconnect_backoff_ms': 100,
    'grpc.max_reconnect_backoff_ms': 1000,
  });
  const { metrics, timeoutMs } = options;
  const call =
    <Req, Res>(name: string, method: Unary<Req, Res>) =>
    (request: Req, metadata: Metadata = new Metadata(), onMetadata?: (metadata: Metadata) => void): Promise<Res> =>
      new Promise((resolve, reject) => {
        const start = process.hrtime.bigint();
        const pending = method.call(client, request, metadata, { deadline: Date.now() + timeoutMs }, (error, response) => {
          if (metrics !== undefined) {
            const labels = { method: name, code: Status[error?.code ?? Status.OK]! };
            metrics.grpcClientCalls.inc(labels);
            metrics.grpcClientCallSeconds.observe(labels, Number(process.hrtime.bigint() - start) / 1e9);
          }
          if (error) reject(error);
          else resolve(response);
        });
        // Initial metadata arrives before the response, so it is read before the promise settles.
        if (onMetadata !== undefined) pending.on('metadata', onMetadata);
      });
  const createPet = call<CreatePetRequest, CreatePetResponse>('CreatePet', client.createPet);
  return {
    listPets: call<ListPetsRequest, ListPetsResponse>('ListPets', client.listPets),
    async createPet(request, metadata) {
      let replayed = false;
      const response = await createPet(request, metadata, (headers) => {
        replayed = headers.get(IDEMPOTENT_REPLAYED_METADATA)[0] === 'true';
      });
      return { ...response, replayed };
    },
    getPet: call<GetPetRequest, GetPetResponse>('GetPet', client.getPet),
    channel: client.getChannel() as Channel,
    close: () => client.close(),
  };
}
