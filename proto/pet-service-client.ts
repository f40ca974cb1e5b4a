import { Metadata, status as Status, type ServiceError } from '@grpc/grpc-js';
import {
  CreatePetRequest,
  CreatePetResponse,
  GetPetRequest,
  GetPetResponse,
  ListPetsRequest,
  ListPetsResponse,
  PetServiceService,
} from './gen/petstore/v1/pet_service';
import type { CertificateFilesOptions, Certificates } from './certificate-files';
import { IDEMPOTENCY_KEY_PATTERN } from './contract';
import { CALLER_ID_METADATA, IDEMPOTENT_REPLAYED_METADATA, RETRY_PUSHBACK_METADATA } from './metadata';
import { callError, cancelledError } from './transport/call-error';
import type { KeepaliveOptions } from './transport/connection';
import { createUnaryTransport, DEFAULT_KEEPALIVE, type UnaryTransport, type UnaryTransportOptions } from './transport/unary-transport';

export { DEFAULT_KEEPALIVE, type KeepaliveOptions };

/** The methods of petstore.v1.PetService, as named on the wire. */
export type PetServiceMethod = 'ListPets' | 'CreatePet' | 'GetPet';

/** Settings of {@link createPetServiceClient}; every one has a production default. */
export interface PetServiceClientOptions {
  /** Deadline of every call, retries included, in milliseconds. Default 2000 (the gateway's default). */
  readonly deadlineMs?: number;
  /**
   * Whether ListPets and GetPet are retried on UNAVAILABLE ({@link READ_RETRY_BACKOFF_MS}), unless
   * the pet service's retry pushback says not to. Default true.
   */
  readonly retryReads?: boolean;
  /** Keepalive pings, or `false` for none. Default {@link DEFAULT_KEEPALIVE}. */
  readonly keepalive?: KeepaliveOptions | false;
  /**
   * Sent as `x-caller-id` on every call whose metadata has none: the pet service scopes
   * idempotency keys to it. Name the calling service (e.g. `svc:billing`).
   */
  readonly callerId?: string;
  /**
   * TLS from PEM files: `caFile` (required) checks the pet service's certificate, `certFile` and
   * `keyFile` are this caller's client certificate (required where the pet service verifies
   * callers, as the manifests' does). The files are read now (a bad one throws
   * `CertificateFilesError`) and again every `reloadIntervalMs`, so rotated certificates are used
   * for new connections without a restart (docs/security.md). The pet service's certificate must
   * hold the target's host: a name as a DNS SAN (sent as SNI), an IP address as an IP SAN (no SNI
   * is sent for an address). Without it: plaintext.
   */
  readonly tls?: CertificateFilesOptions;
  /** With {@link tls}: the name sent as SNI and checked against the pet service's certificate instead of the target's host. */
  readonly serverNameOverride?: string;
  /** Settings of the transport, applied over {@link defaultTransportOptions}. */
  readonly transportOptions?: Omit<UnaryTransportOptions, 'tls' | 'serverNameOverride' | 'keepalive'>;
  /**
   * Called once per call as it ends, retries included, with its final status and its start
   * (`process.hrtime.bigint()`): for metrics. Calls are not timed without it.
   */
  readonly onCallEnd?: (method: PetServiceMethod, code: Status, startedAt: bigint) => void;
}

/** Per-call options of {@link PromisePetServiceClient}'s methods. */
export interface PetServiceCallOptions {
  /**
   * Cancels the call when aborted: the call's stream is reset (the pet service sees CANCELLED and
   * stops the call's work), no retry follows, and the promise rejects with CANCELLED. The gateway
   * aborts it when the HTTP client goes away.
   */
  readonly signal?: AbortSignal;
}

/** A create's answer, and whether it replays an earlier create with the same idempotency key. */
export interface CreatedPet extends CreatePetResponse {
  readonly replayed: boolean;
}

/** A create's answer as protobuf bytes (a CreatePetResponse), and whether it replays an earlier create. */
export interface RawCreatedPet {
  readonly bytes: Buffer;
  readonly replayed: boolean;
}

/**
 * The calls of {@link PromisePetServiceClient}, deadline, retries, cancellation, caller id and
 * `onCallEnd` alike, answering the response message's protobuf bytes as received (a Buffer of its
 * own per call), undecoded: for a caller that writes its answer from the bytes itself, without the
 * generated decoder's objects.
 */
export interface RawPetServiceCalls {
  listPets(request: ListPetsRequest, metadata?: Metadata, options?: PetServiceCallOptions): Promise<Buffer>;
  createPet(request: CreatePetRequest, metadata?: Metadata, options?: PetServiceCallOptions): Promise<RawCreatedPet>;
  getPet(request: GetPetRequest, metadata?: Metadata, options?: PetServiceCallOptions): Promise<Buffer>;
}

/** The pet service with promise-returning calls, each with a deadline; made by {@link createPetServiceClient}. */
export interface PromisePetServiceClient {
  listPets(request: ListPetsRequest, metadata?: Metadata, options?: PetServiceCallOptions): Promise<ListPetsResponse>;
  createPet(request: CreatePetRequest, metadata?: Metadata, options?: PetServiceCallOptions): Promise<CreatedPet>;
  getPet(request: GetPetRequest, metadata?: Metadata, options?: PetServiceCallOptions): Promise<GetPetResponse>;
  /** The same calls, answering the response's protobuf bytes undecoded. */
  readonly raw: RawPetServiceCalls;
  /**
   * A unary call of any other method of the same server (its health service, say) on the same
   * connections, with the client's deadline and caller id, its cancellation, no retries: the
   * response message's bytes.
   */
  call(path: string, request: Uint8Array, metadata?: Metadata, options?: PetServiceCallOptions): Promise<Buffer>;
  /** The connections: their state (a readiness check), their count by state (a gauge). */
  readonly transport: UnaryTransport;
  /** The TLS files in force (their expiry, for metrics), or undefined without {@link PetServiceClientOptions.tls}. */
  certificates(): Certificates | undefined;
  /** Calls under way finish; new ones fail UNAVAILABLE; the connections then close. */
  close(): void;
}

/**
 * Pauses before the retries of a read that failed UNAVAILABLE (each drawn between half and all of
 * its value). Reads are idempotent; CreatePet is never retried, since a create that reached the
 * store but lost its answer would be made twice. No other code is retried: RESOURCE_EXHAUSTED
 * says the pet service is full, and another call would only add to it.
 *
 * The pet service's retry pushback ({@link RETRY_PUSHBACK_METADATA}) has the last word: negative,
 * no retry (it says so when its store did not answer in time, which a retry would only slow
 * further); non-negative, the pause is that long.
 *
 * A read is retried only while the transport is READY, that is while some replica is connected:
 * then UNAVAILABLE means one replica went away under the call and another can answer. With none
 * connected the pet service is down, and the caller is told so at once.
 *
 * A call whose HTTP/2 stream the pet service refused (nothing of it was processed) is sent again
 * by the transport itself, whatever its method, before this policy sees anything.
 */
export const READ_RETRY_BACKOFF_MS = [20, 60] as const;

/**
 * Shortest time between two DNS resolutions of a `dns:///` target. The transport resolves again
 * when a connection goes away (the pet service recycles every client connection at its maximum
 * age) and periodically, so a replica added to the name is called within about that age plus this
 * interval.
 */
export const MIN_RESOLUTION_INTERVAL_MS = 10_000;

/**
 * Connection backoff of the pet service's client: gRPC's algorithm with a first wait of 100 ms and
 * a longest of 1 s instead of its 1 s and 120 s, so that a restarted pet service is called again
 * within a second of being back (the rolling-restart and soak suites rely on it;
 * docs/decisions.md).
 */
export const PET_SERVICE_BACKOFF = { initialMs: 100, maxMs: 1000 } as const;

/** The transport settings {@link createPetServiceClient} starts from. */
export function defaultTransportOptions(keepalive: KeepaliveOptions | false = DEFAULT_KEEPALIVE): UnaryTransportOptions {
  return { keepalive, backoff: PET_SERVICE_BACKOFF, minResolutionIntervalMs: MIN_RESOLUTION_INTERVAL_MS };
}

/** A unary method as the client calls it: its path, the request's encoder and the response's decoder. */
interface UnaryMethod<Req, Res> {
  readonly path: string;
  readonly encode: (request: Req) => Uint8Array;
  readonly decode: (bytes: Buffer) => Res;
}

const METHODS = {
  listPets: { path: PetServiceService.listPets.path, encode: (request: ListPetsRequest) => ListPetsRequest.encode(request).finish(), decode: ListPetsResponse.decode },
  createPet: { path: PetServiceService.createPet.path, encode: (request: CreatePetRequest) => CreatePetRequest.encode(request).finish(), decode: CreatePetResponse.decode },
  getPet: { path: PetServiceService.getPet.path, encode: (request: GetPetRequest) => GetPetRequest.encode(request).finish(), decode: GetPetResponse.decode },
};

/** A method whose response is answered as received: its protobuf bytes, undecoded. */
function undecoded<Req>(method: UnaryMethod<Req, unknown>): UnaryMethod<Req, Buffer> {
  return { path: method.path, encode: method.encode, decode: (bytes) => bytes };
}

/**
 * The pet service's retry pushback in `error`'s trailers, in milliseconds: undefined when it sent
 * none, negative ("do not retry") when it is not a non-negative integer, as gRFC A6 reads it.
 */
function pushbackOf(error: ServiceError): number | undefined {
  const value = error.metadata?.get(RETRY_PUSHBACK_METADATA)[0];
  if (value === undefined) return undefined;
  return typeof value === 'string' && /^\d{1,9}$/.test(value) ? Number(value) : -1;
}

/** Resolves after `ms`, or rejects with CANCELLED as soon as `signal` aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', abort);
      resolve();
    }, ms);
    const abort = (): void => {
      clearTimeout(timer);
      reject(cancelledError());
    };
    signal?.addEventListener('abort', abort, { once: true });
  });
}

/**
 * The pet service client for any process that calls it, the gateway included, with the production
 * defaults: a deadline on every call, reads retried on UNAVAILABLE (unless the pet service pushes
 * back), cancellation through an AbortSignal per call, round robin over every address of a
 * `dns:///` target, keepalive, quick reconnects. Make one per process and keep it: HTTP/2
 * multiplexes every call over its connections, and a client per request would pay a connection
 * setup each time.
 *
 * Calls are made on `@petstore/proto`'s own unary transport ({@link createUnaryTransport}),
 * encoded and decoded by the generated messages (docs/decisions.md).
 *
 * @param target `host:port`, or `dns:///name:port` (a headless Service) to balance over every pod.
 * @throws RangeError for an option out of range; `CertificateFilesError`; `InvalidTargetError`.
 */
export function createPetServiceClient(target: string, options: PetServiceClientOptions = {}): PromisePetServiceClient {
  const deadlineMs = options.deadlineMs ?? 2000;
  // Fail at start-up, not on the first create the pet service refuses.
  if (!(deadlineMs > 0 && Number.isFinite(deadlineMs))) throw new RangeError(`deadlineMs: must be a positive number of milliseconds, not ${deadlineMs}`);
  const { onCallEnd, callerId } = options;
  if (callerId !== undefined && !IDEMPOTENCY_KEY_PATTERN.test(callerId)) {
    throw new RangeError('callerId: must be 1 to 255 visible ASCII characters, as the pet service requires of x-caller-id');
  }
  // Options of the grpc-js channel this client ran on before: refused, rather than ignored into plaintext.
  const former = options as { credentials?: unknown; channelOptions?: unknown };
  if (former.credentials !== undefined) {
    throw new RangeError(`credentials${options.tls === undefined ? '' : ' and tls'}: grpc-js ChannelCredentials are no longer an option (the client runs on its own transport): give tls alone, or nothing for plaintext`);
  }
  if (former.channelOptions !== undefined) throw new RangeError('channelOptions: grpc-js channel options are no longer an option (the client runs on its own transport): use serverNameOverride or transportOptions');
  const transport = createUnaryTransport(target, {
    ...defaultTransportOptions(options.keepalive),
    ...options.transportOptions,
    ...(options.tls === undefined ? {} : { tls: options.tls }),
    ...(options.serverNameOverride === undefined ? {} : { serverNameOverride: options.serverNameOverride }),
  });
  const retryable = (error: unknown, retry: number, deadline: number, idempotent: boolean): number | undefined => {
    const failure = error as ServiceError;
    const backoff = READ_RETRY_BACKOFF_MS[retry];
    if (backoff === undefined || failure.code !== Status.UNAVAILABLE || !idempotent || transport.state() !== 'READY') return undefined;
    const pushback = pushbackOf(failure);
    if (pushback !== undefined && pushback < 0) return undefined;
    const wait = pushback ?? backoff * (0.5 + Math.random() / 2);
    return Date.now() + wait < deadline ? wait : undefined;
  };
  const withCaller = (metadata: Metadata): Metadata => {
    if (callerId === undefined || metadata.get(CALLER_ID_METADATA).length > 0) return metadata;
    const copy = metadata.clone();
    copy.set(CALLER_ID_METADATA, callerId);
    return copy;
  };
  /** The request encoded once for every attempt; an encoder's throw is INTERNAL, as in grpc-js. */
  const encode = <Req>(method: UnaryMethod<Req, unknown>, request: Req): Uint8Array => {
    try {
      return method.encode(request);
    } catch (error) {
      throw callError(Status.INTERNAL, `Request message serialization failure: ${(error as Error).message}`);
    }
  };
  /** The response decoded; a decoder's throw is INTERNAL, as in grpc-js. */
  const decode = <Res>(method: UnaryMethod<never, Res>, bytes: Buffer): Res => {
    try {
      return method.decode(bytes);
    } catch (error) {
      throw callError(Status.INTERNAL, `Response message parsing error: ${(error as Error).message}`);
    }
  };
  const call =
    <Req, Res>(name: PetServiceMethod, method: UnaryMethod<Req, Res>, retries: boolean) =>
    async (
      request: Req,
      metadata: Metadata = new Metadata(),
      options?: PetServiceCallOptions,
      onHeaders?: (metadata: Metadata) => void,
    ): Promise<Res> => {
      const start = onCallEnd === undefined ? 0n : process.hrtime.bigint();
      const deadline = Date.now() + deadlineMs;
      const sent = withCaller(metadata);
      const signal = options?.signal;
      const callOptions = { deadline, signal, onHeaders };
      let code = Status.OK;
      try {
        const message = encode(method, request);
        for (let retry = 0; ; retry += 1) {
          try {
            return decode(method as UnaryMethod<never, Res>, await transport.call(method.path, message, sent, callOptions));
          } catch (error) {
            const wait = signal?.aborted === true ? undefined : retryable(error, retry, deadline, retries);
            if (wait === undefined) throw error;
            await pause(wait, signal);
          }
        }
      } catch (error) {
        code = (error as ServiceError).code ?? Status.UNKNOWN;
        throw error;
      } finally {
        if (onCallEnd !== undefined) onCallEnd(name, code, start);
      }
    };
  /** CreatePet with its answer's replay flag, read from the response headers. */
  const created =
    <Res>(create: ReturnType<typeof call<CreatePetRequest, Res>>) =>
    async (request: CreatePetRequest, metadata?: Metadata, options?: PetServiceCallOptions): Promise<{ response: Res; replayed: boolean }> => {
      let replayed = false;
      const response = await create(request, metadata, options, (headers) => {
        replayed = headers.get(IDEMPOTENT_REPLAYED_METADATA)[0] === 'true';
      });
      return { response, replayed };
    };
  const retryReads = options.retryReads ?? true;
  const { listPets, getPet, createPet } = METHODS;
  const createDecoded = created(call('CreatePet', createPet, false));
  const createRaw = created(call('CreatePet', undecoded(createPet), false));
  return {
    listPets: call('ListPets', listPets, retryReads),
    async createPet(request, metadata, options) {
      const { response, replayed } = await createDecoded(request, metadata, options);
      return { ...response, replayed };
    },
    getPet: call('GetPet', getPet, retryReads),
    raw: {
      listPets: call('ListPets', undecoded(listPets), retryReads),
      async createPet(request, metadata, options) {
        const { response, replayed } = await createRaw(request, metadata, options);
        return { bytes: response, replayed };
      },
      getPet: call('GetPet', undecoded(getPet), retryReads),
    },
    call: (path, request, metadata = new Metadata(), options) => transport.call(path, request, withCaller(metadata), { deadline: Date.now() + deadlineMs, signal: options?.signal }),
    transport,
    certificates: () => transport.certificates(),
    close: () => transport.close(),
  };
}
