import { type Channel, connectivityState, credentials, Metadata, status as Status, type ServiceError } from '@grpc/grpc-js';
import {
  type CreatePetRequest,
  type CreatePetResponse,
  IDEMPOTENT_REPLAYED_METADATA,
  type GetPetRequest,
  type GetPetResponse,
  type ListPetsRequest,
  type ListPetsResponse,
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
 * round_robin spreads calls over every resolved address: one HTTP/2 connection would otherwise pin
 * all traffic to one replica behind a layer-4 Service. No retry policy: reads are retried by
 * {@link createPetClient} itself (see {@link READ_RETRY_BACKOFF_MS}).
 */
export const SERVICE_CONFIG = {
  loadBalancingConfig: [{ round_robin: {} }],
};

/**
 * Pauses before the retries of a read that failed UNAVAILABLE (each drawn between half and all of
 * its value). Reads are idempotent; CreatePet is never retried, since a create that reached the
 * store but lost its answer would be made twice.
 *
 * A read is retried only while the channel is READY, that is while some replica is connected:
 * then UNAVAILABLE means one replica went away under the call and another can answer. With none
 * connected the pet service is down, and the client is told so at once (503). grpc-js's own retry
 * policy kept retrying with backoff whatever the channel's state, so a read that began as the last
 * replica went away could take the whole deadline, where a create answered 503 at once.
 */
export const READ_RETRY_BACKOFF_MS = [20, 60] as const;

/**
 * One long-lived channel for the process: HTTP/2 multiplexes every call over it, and creating a
 * client per request would pay a connection setup each time.
 */
export function createPetClient(options: PetClientOptions): PetClient {
  const client = new PetServiceClient(options.target, credentials.createInsecure(), {
    'grpc.service_config': JSON.stringify(SERVICE_CONFIG),
    // Reconnect quickly once a restarted pet service is back.
    'grpc.initial_reconnect_backoff_ms': 100,
    'grpc.max_reconnect_backoff_ms': 1000,
  });
  const channel = client.getChannel() as Channel;
  const { metrics, timeoutMs } = options;
  const once = <Req, Res>(
    method: Unary<Req, Res>,
    request: Req,
    metadata: Metadata,
    deadline: number,
    onMetadata?: (metadata: Metadata) => void,
  ): Promise<Res> =>
    new Promise((resolve, reject) => {
      // grpc-js captures a stack trace (`new Error()`) at every call, only to append it to the
      // message of an error; the gateway never shows those traces, and capturing one cost about
      // 3% of the gateway's CPU per read. The error's own stack is still captured when it fails.
      const stackTraceLimit = Error.stackTraceLimit;
      Error.stackTraceLimit = 0;
      let pending: ReturnType<Unary<Req, Res>>;
      try {
        pending = method.call(client, request, metadata, { deadline }, (error, response) => (error ? reject(error) : resolve(response)));
      } finally {
        Error.stackTraceLimit = stackTraceLimit;
      }
      // Initial metadata arrives before the response, so it is read before the promise settles.
      if (onMetadata !== undefined) pending.on('metadata', onMetadata);
    });
  const retryable = (error: unknown, retry: number, deadline: number): number | undefined => {
    const backoff = READ_RETRY_BACKOFF_MS[retry];
    if (backoff === undefined || (error as ServiceError).code !== Status.UNAVAILABLE) return undefined;
    if (channel.getConnectivityState(false) !== connectivityState.READY) return undefined;
    const pause = backoff * (0.5 + Math.random() / 2);
    return Date.now() + pause < deadline ? pause : undefined;
  };
  const call = <Req, Res>(name: string, method: Unary<Req, Res>, retries: boolean) => {
    // One label object per status code, made once rather than per call.
    const labels = new Map<number, { method: string; code: string }>();
    const labelsOf = (code: number) => {
      let found = labels.get(code);
      if (found === undefined) labels.set(code, (found = { method: name, code: Status[code]! }));
      return found;
    };
    return async (request: Req, metadata: Metadata = new Metadata(), onMetadata?: (metadata: Metadata) => void): Promise<Res> => {
      const start = process.hrtime.bigint();
      const deadline = Date.now() + timeoutMs;
      let code = Status.OK;
      try {
        for (let retry = 0; ; retry += 1) {
          try {
            return await once(method, request, metadata, deadline, onMetadata);
          } catch (error) {
            const pause = retries ? retryable(error, retry, deadline) : undefined;
            if (pause === undefined) {
              code = (error as ServiceError).code ?? Status.UNKNOWN;
              throw error;
            }
            await new Promise((resolve) => setTimeout(resolve, pause));
          }
        }
      } finally {
        if (metrics !== undefined) {
          const callLabels = labelsOf(code);
          metrics.grpcClientCalls.inc(callLabels);
          metrics.grpcClientCallSeconds.observe(callLabels, Number(process.hrtime.bigint() - start) / 1e9);
        }
      }
    };
  };
  const createPet = call<CreatePetRequest, CreatePetResponse>('CreatePet', client.createPet, false);
  return {
    listPets: call<ListPetsRequest, ListPetsResponse>('ListPets', client.listPets, true),
    async createPet(request, metadata) {
      let replayed = false;
      const response = await createPet(request, metadata, (headers) => {
        replayed = headers.get(IDEMPOTENT_REPLAYED_METADATA)[0] === 'true';
      });
      return { ...response, replayed };
    },
    getPet: call<GetPetRequest, GetPetResponse>('GetPet', client.getPet, true),
    channel,
    close: () => client.close(),
  };
}
