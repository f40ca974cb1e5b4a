import {
  Channel,
  type ChannelCredentials,
  type ChannelOptions,
  connectivityState,
  credentials as grpcCredentials,
  type InterceptingListener,
  Metadata,
  status as Status,
  type ServiceError,
  type StatusObject,
} from '@grpc/grpc-js';
import {
  type CreatePetRequest,
  type CreatePetResponse,
  type DeletePetRequest,
  type DeletePetResponse,
  type GetPetRequest,
  type GetPetResponse,
  type ListPetsRequest,
  type ListPetsResponse,
  PetServiceClient,
  PetServiceService,
  type UpdatePetRequest,
  type UpdatePetResponse,
} from './gen/petstore/v1/pet_service';
import { CertificateFiles, CertificateFilesError, type CertificateFilesOptions, type Certificates } from './certificate-files';
import { IDEMPOTENCY_KEY_PATTERN } from './contract';
import { createTlsChannelCredentials } from './tls-channel-credentials';
import { CALLER_ID_METADATA, IDEMPOTENT_REPLAYED_METADATA, RETRY_PUSHBACK_METADATA } from './metadata';

/** The methods of petstore.v1.PetService, as named on the wire. */
export type PetServiceMethod = 'ListPets' | 'CreatePet' | 'GetPet' | 'UpdatePet' | 'DeletePet';

/** HTTP/2 keepalive pings of each connection to the pet service. */
export interface KeepaliveOptions {
  /** Time between pings. */
  readonly timeMs: number;
  /** How long a ping may go unanswered before the connection is closed as dead. */
  readonly timeoutMs: number;
}

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
  /** Default insecure (plaintext), unless {@link tls} is given. */
  readonly credentials?: ChannelCredentials;
  /**
   * TLS from PEM files: `caFile` (required) checks the pet service's certificate, `certFile` and
   * `keyFile` are this caller's client certificate (required where the pet service verifies
   * callers, as the manifests' does). The files are read now (a bad one throws
   * {@link CertificateFilesError}) and again every `reloadIntervalMs`, so rotated certificates are
   * used for new connections without a restart (docs/security.md). The pet service's certificate
   * must hold the target's host: a name as a DNS SAN (sent as SNI), an IP address as an IP SAN
   * (no SNI is sent for an address). Not with {@link credentials}.
   */
  readonly tls?: CertificateFilesOptions;
  /** grpc-js channel options, applied over {@link defaultChannelOptions}. */
  readonly channelOptions?: ChannelOptions;
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

/** A change's answer, and whether it replays an earlier change with the same idempotency key. */
export interface UpdatedPet extends UpdatePetResponse {
  readonly replayed: boolean;
}

/** A change's answer as protobuf bytes (an UpdatePetResponse), and whether it replays an earlier change. */
export interface RawUpdatedPet {
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
  updatePet(request: UpdatePetRequest, metadata?: Metadata, options?: PetServiceCallOptions): Promise<RawUpdatedPet>;
}

/** The pet service with promise-returning calls, each with a deadline; made by {@link createPetServiceClient}. */
export interface PromisePetServiceClient {
  listPets(request: ListPetsRequest, metadata?: Metadata, options?: PetServiceCallOptions): Promise<ListPetsResponse>;
  createPet(request: CreatePetRequest, metadata?: Metadata, options?: PetServiceCallOptions): Promise<CreatedPet>;
  getPet(request: GetPetRequest, metadata?: Metadata, options?: PetServiceCallOptions): Promise<GetPetResponse>;
  /** Never retried but for a refused stream, as CreatePet: a change whose answer was lost may have been made. */
  updatePet(request: UpdatePetRequest, metadata?: Metadata, options?: PetServiceCallOptions): Promise<UpdatedPet>;
  /** Never retried but for a refused stream: a second try of a delete that was made answers NOT_FOUND. */
  deletePet(request: DeletePetRequest, metadata?: Metadata, options?: PetServiceCallOptions): Promise<DeletePetResponse>;
  /** The same calls (but DeletePet, which answers nothing), answering the response's protobuf bytes undecoded. */
  readonly raw: RawPetServiceCalls;
  /**
   * A generated ts-proto client on the same channel, made when first read: the calls above do not
   * go through it, and its calls have none of their defaults but the channel's.
   */
  readonly client: PetServiceClient;
  /** The channel, for other clients of the same service (health checks) to share. */
  readonly channel: Channel;
  /** The TLS files in force (their expiry, for metrics), or undefined without {@link PetServiceClientOptions.tls}. */
  certificates(): Certificates | undefined;
  close(): void;
}

/**
 * round_robin spreads calls over every address a `dns:///` target resolves to: one HTTP/2
 * connection would otherwise pin all traffic to one replica behind a layer-4 Service. No retry
 * policy: reads are retried by the client itself (see {@link READ_RETRY_BACKOFF_MS}).
 */
export const SERVICE_CONFIG = {
  loadBalancingConfig: [{ round_robin: {} }],
};

/**
 * Pings every 10 s, dead after 5 s unanswered: a connection whose peer vanished without closing
 * it (a node lost, a network partition) would otherwise stay READY, and round_robin would keep
 * sending it calls that each wait out their deadline, until TCP gave up many minutes later.
 * The pet service (grpc-js) sets no minimum ping interval, so pings without calls are allowed.
 */
export const DEFAULT_KEEPALIVE: KeepaliveOptions = { timeMs: 10_000, timeoutMs: 5_000 };

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
 * A call whose stream was refused ({@link refused}) is retried the same way, whatever its method
 * and the channel's state: nothing of it was processed.
 *
 * A read is retried only while the channel is READY, that is while some replica is connected:
 * then UNAVAILABLE means one replica went away under the call and another can answer. With none
 * connected the pet service is down, and the caller is told so at once. grpc-js's own retry
 * policy kept retrying with backoff whatever the channel's state, so a read that began as the last
 * replica went away could take the whole deadline, where a create failed at once.
 */
export const READ_RETRY_BACKOFF_MS = [20, 60] as const;

/**
 * Shortest time between two DNS resolutions of a `dns:///` target. grpc-js resolves again only when
 * a connection goes away, never on a timer; the pet service recycles every client connection at its
 * maximum age, so a replica added to the name is called within about that age plus this interval.
 */
export const MIN_RESOLUTION_INTERVAL_MS = 10_000;

/**
 * Whether a call failed because its HTTP/2 stream was refused (RST_STREAM REFUSED_STREAM): RFC 9113
 * section 8.7 guarantees the server processed nothing of it, so any call, a create included, can be
 * sent again. A stream opened just as the pet service recycles a connection (its maximum age) is
 * refused; grpc-js sends such a call again once, on whatever connection it picks, and only reports
 * the second refusal. grpc-js says so only in the details, in one of two words depending on whether
 * the refusal came as the stream was written or after.
 */
function refused(error: ServiceError): boolean {
  return typeof error.details === 'string' && REFUSED_DETAILS.test(error.details);
}

const REFUSED_DETAILS = /NGHTTP2_REFUSED_STREAM|^Stream refused by server$/;

/** The channel options {@link createPetServiceClient} starts from. */
export function defaultChannelOptions(keepalive: KeepaliveOptions | false = DEFAULT_KEEPALIVE): ChannelOptions {
  return {
    'grpc.service_config': JSON.stringify(SERVICE_CONFIG),
    'grpc.dns_min_time_between_resolutions_ms': MIN_RESOLUTION_INTERVAL_MS,
    // Reconnect quickly once a restarted pet service is back.
    'grpc.initial_reconnect_backoff_ms': 100,
    'grpc.max_reconnect_backoff_ms': 1000,
    ...(keepalive === false
      ? {}
      : {
          'grpc.keepalive_time_ms': keepalive.timeMs,
          'grpc.keepalive_timeout_ms': keepalive.timeoutMs,
          'grpc.keepalive_permit_without_calls': 1,
        }),
  };
}

/**
 * A unary method as the channel calls it: its path, the request's encoder and the response's
 * decoder, all from ts-proto's generated service definition ({@link PetServiceService}).
 */
interface UnaryMethod<Req, Res> {
  readonly path: string;
  readonly requestSerialize: (request: Req) => Buffer;
  readonly responseDeserialize: (bytes: Buffer) => Res;
}

/** A method whose response is answered as received: its protobuf bytes, undecoded. */
function undecoded<Req>(method: UnaryMethod<Req, unknown>): UnaryMethod<Req, Buffer> {
  return { path: method.path, requestSerialize: method.requestSerialize, responseDeserialize: (bytes) => bytes };
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

/**
 * A failed call's error, as grpc-js's generated clients make it (`callErrorFromStatus`): an Error
 * whose message is `<code> <NAME>: <details>`, with the status's code, details and metadata.
 */
function callError(status: StatusObject): ServiceError {
  return Object.assign(new Error(`${status.code} ${Status[status.code]}: ${status.details}`), {
    code: status.code,
    details: status.details,
    metadata: status.metadata,
  });
}

/** What a call cancelled through its signal rejects with: grpc-js's own error for `cancel()`. */
function cancelledError(): ServiceError {
  return callError({ code: Status.CANCELLED, details: CANCELLED_ON_CLIENT, metadata: new Metadata() });
}

const CANCELLED_ON_CLIENT = 'Cancelled on client';

/** Resolves after `ms`, or rejects with {@link cancelledError} as soon as `signal` aborts. */
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
 * One attempt of a unary call on the channel: the request's bytes out, one response back, the
 * call's status settling the promise. What grpc-js's generated client adds above its channel
 * (interceptors, a call object with events, a stack trace captured per call) is left out; what it
 * checks of a unary answer is kept: a response that cannot be decoded is INTERNAL, a call that ends
 * OK without a response is UNIMPLEMENTED, and so is a second response (failed as it arrives, where
 * the generated client waits out the deadline). Aborting `signal` cancels the call, as the
 * generated client's `cancel()` does. Also the listener for the signal's abort.
 */
class UnaryAttempt<Res> implements InterceptingListener {
  private response: Res | undefined;
  private received = false;
  /** A status of this side's own (an undecodable response), reported instead of the call's. */
  private failure: StatusObject | undefined;
  private readonly call: ReturnType<Channel['createCall']>;

  constructor(
    channel: Channel,
    private readonly method: UnaryMethod<never, Res>,
    message: Buffer,
    metadata: Metadata,
    deadline: number,
    private readonly signal: AbortSignal | undefined,
    private readonly onMetadata: ((metadata: Metadata) => void) | undefined,
    private readonly resolve: (response: Res) => void,
    private readonly reject: (error: ServiceError) => void,
  ) {
    this.call = channel.createCall(method.path, deadline, undefined, null, undefined);
    this.call.start(metadata, this);
    this.call.startRead();
    this.call.sendMessageWithContext({}, message);
    this.call.halfClose();
    signal?.addEventListener('abort', this);
  }

  onReceiveMetadata(metadata: Metadata): void {
    this.onMetadata?.(metadata);
  }

  onReceiveMessage(bytes: Buffer): void {
    if (this.received) {
      this.call.cancelWithStatus(Status.UNIMPLEMENTED, 'Too many responses received');
      return;
    }
    this.received = true;
    try {
      this.response = this.method.responseDeserialize(bytes);
    } catch (error) {
      this.failure = { code: Status.INTERNAL, details: `Response message parsing error: ${(error as Error).message}`, metadata: new Metadata() };
      this.call.cancelWithStatus(this.failure.code, this.failure.details);
      return;
    }
    // Read on, so that a second response is seen (and refused) rather than left unread.
    this.call.startRead();
  }

  onReceiveStatus(status: StatusObject): void {
    this.signal?.removeEventListener('abort', this);
    const final = this.failure ?? status;
    if (final.code !== Status.OK) this.reject(callError(final));
    else if (!this.received) this.reject(callError({ code: Status.UNIMPLEMENTED, details: 'No message received', metadata: final.metadata }));
    else this.resolve(this.response!);
  }

  /** The signal aborted: the stream is reset, and the status that follows is CANCELLED. */
  handleEvent(): void {
    this.call.cancelWithStatus(Status.CANCELLED, CANCELLED_ON_CLIENT);
  }
}

/**
 * The pet service client for any process that calls it, the gateway included, with the production
 * defaults: a deadline on every call, reads retried on UNAVAILABLE (unless the pet service pushes
 * back), cancellation through an AbortSignal per call, round_robin over every address
 * of a `dns:///` target, keepalive, quick reconnects. Make one per process and keep it: HTTP/2
 * multiplexes every call over its channel, and a client per request would pay a connection setup
 * each time.
 *
 * Calls are made on grpc-js's `Channel` itself (`createCall`), encoded and decoded by the generated
 * {@link PetServiceService} definition, not through the generated client's per-call machinery
 * (docs/decisions.md).
 *
 * @param target `host:port`, or `dns:///name:port` (a headless Service) to balance over every pod.
 */
export function createPetServiceClient(target: string, options: PetServiceClientOptions = {}): PromisePetServiceClient {
  const deadlineMs = options.deadlineMs ?? 2000;
  // Fail at start-up, not on the first create the pet service refuses.
  if (!(deadlineMs > 0 && Number.isFinite(deadlineMs))) throw new RangeError(`deadlineMs: must be a positive number of milliseconds, not ${deadlineMs}`);
  const { onCallEnd, callerId } = options;
  if (callerId !== undefined && !IDEMPOTENCY_KEY_PATTERN.test(callerId)) {
    throw new RangeError('callerId: must be 1 to 255 visible ASCII characters, as the pet service requires of x-caller-id');
  }
  const certificates = certificateFilesOf(options);
  const credentials =
    certificates === undefined
      ? (options.credentials ?? grpcCredentials.createInsecure())
      : createTlsChannelCredentials(certificates);
  const channel = new Channel(target, credentials, {
    ...defaultChannelOptions(options.keepalive),
    ...options.channelOptions,
  });
  const once = <Res>(
    method: UnaryMethod<never, Res>,
    message: Buffer,
    metadata: Metadata,
    deadline: number,
    signal: AbortSignal | undefined,
    onMetadata: ((metadata: Metadata) => void) | undefined,
  ): Promise<Res> =>
    new Promise((resolve, reject) => {
      if (signal?.aborted === true) reject(cancelledError());
      else new UnaryAttempt(channel, method, message, metadata, deadline, signal, onMetadata, resolve, reject);
    });
  const retryable = (error: unknown, retry: number, deadline: number, idempotent: boolean): number | undefined => {
    const failure = error as ServiceError;
    const backoff = READ_RETRY_BACKOFF_MS[retry];
    if (backoff === undefined || failure.code !== Status.UNAVAILABLE) return undefined;
    if (!refused(failure) && !(idempotent && channel.getConnectivityState(false) === connectivityState.READY)) return undefined;
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
  const encode = <Req>(method: UnaryMethod<Req, unknown>, request: Req): Buffer => {
    try {
      return method.requestSerialize(request);
    } catch (error) {
      throw callError({ code: Status.INTERNAL, details: `Request message serialization failure: ${(error as Error).message}`, metadata: new Metadata() });
    }
  };
  const call =
    <Req, Res>(name: PetServiceMethod, method: UnaryMethod<Req, Res>, retries: boolean) =>
    async (
      request: Req,
      metadata: Metadata = new Metadata(),
      options?: PetServiceCallOptions,
      onMetadata?: (metadata: Metadata) => void,
    ): Promise<Res> => {
      const start = onCallEnd === undefined ? 0n : process.hrtime.bigint();
      const deadline = Date.now() + deadlineMs;
      const sent = withCaller(metadata);
      const signal = options?.signal;
      let code = Status.OK;
      try {
        const message = encode(method, request);
        for (let retry = 0; ; retry += 1) {
          try {
            return await once(method, message, sent, deadline, signal, onMetadata);
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
  /** CreatePet or UpdatePet with its answer's replay flag, read from the response headers. */
  const created =
    <Req, Res>(create: ReturnType<typeof call<Req, Res>>) =>
    async (request: Req, metadata?: Metadata, options?: PetServiceCallOptions): Promise<{ response: Res; replayed: boolean }> => {
      let replayed = false;
      const response = await create(request, metadata, options, (headers) => {
        replayed = headers.get(IDEMPOTENT_REPLAYED_METADATA)[0] === 'true';
      });
      return { response, replayed };
    };
  const retryReads = options.retryReads ?? true;
  const { listPets, getPet, createPet, updatePet, deletePet } = PetServiceService;
  const createDecoded = created(call('CreatePet', createPet, false));
  const createRaw = created(call('CreatePet', undecoded(createPet), false));
  const updateDecoded = created(call('UpdatePet', updatePet, false));
  const updateRaw = created(call('UpdatePet', undecoded(updatePet), false));
  let generated: PetServiceClient | undefined;
  return {
    listPets: call('ListPets', listPets, retryReads),
    async createPet(request, metadata, options) {
      const { response, replayed } = await createDecoded(request, metadata, options);
      return { ...response, replayed };
    },
    getPet: call('GetPet', getPet, retryReads),
    async updatePet(request, metadata, options) {
      const { response, replayed } = await updateDecoded(request, metadata, options);
      return { ...response, replayed };
    },
    deletePet: call('DeletePet', deletePet, false),
    raw: {
      listPets: call('ListPets', undecoded(listPets), retryReads),
      async createPet(request, metadata, options) {
        const { response, replayed } = await createRaw(request, metadata, options);
        return { bytes: response, replayed };
      },
      getPet: call('GetPet', undecoded(getPet), retryReads),
      async updatePet(request, metadata, options) {
        const { response, replayed } = await updateRaw(request, metadata, options);
        return { bytes: response, replayed };
      },
    },
    get client() {
      return (generated ??= new PetServiceClient(target, credentials, { channelOverride: channel }));
    },
    channel,
    certificates: () => certificates?.current,
    close: () => {
      channel.close();
      certificates?.close();
    },
  };
}

/** The files of {@link PetServiceClientOptions.tls}, read. @throws CertificateFilesError, RangeError */
function certificateFilesOf(options: PetServiceClientOptions): CertificateFiles | undefined {
  if (options.tls === undefined) return undefined;
  if (options.credentials !== undefined) throw new RangeError('credentials and tls: give one, not both');
  if (options.tls.caFile === undefined) throw new CertificateFilesError('caFile', "required: the CA that the pet service's certificate is checked against");
  return new CertificateFiles(options.tls);
}
