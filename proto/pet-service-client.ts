import {
  type Channel,
  type ChannelCredentials,
  type ChannelOptions,
  connectivityState,
  credentials as grpcCredentials,
  Metadata,
  status as Status,
  type ServiceError,
} from '@grpc/grpc-js';
import {
  type CreatePetRequest,
  type CreatePetResponse,
  type GetPetRequest,
  type GetPetResponse,
  type ListPetsRequest,
  type ListPetsResponse,
  PetServiceClient,
} from './gen/petstore/v1/pet_service';
import { CertificateFiles, CertificateFilesError, type CertificateFilesOptions, type Certificates } from './certificate-files';
import { IDEMPOTENCY_KEY_PATTERN } from './contract';
import { createTlsChannelCredentials } from './tls-channel-credentials';
import { CALLER_ID_METADATA, IDEMPOTENT_REPLAYED_METADATA, RETRY_PUSHBACK_METADATA } from './metadata';

/** The methods of petstore.v1.PetService, as named on the wire. */
export type PetServiceMethod = 'ListPets' | 'CreatePet' | 'GetPet';

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

/** The pet service with promise-returning calls, each with a deadline; made by {@link createPetServiceClient}. */
export interface PromisePetServiceClient {
  listPets(request: ListPetsRequest, metadata?: Metadata, options?: PetServiceCallOptions): Promise<ListPetsResponse>;
  createPet(request: CreatePetRequest, metadata?: Metadata, options?: PetServiceCallOptions): Promise<CreatedPet>;
  getPet(request: GetPetRequest, metadata?: Metadata, options?: PetServiceCallOptions): Promise<GetPetResponse>;
  /** The generated ts-proto client underneath, on the same channel. */
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

type Unary<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options: { deadline: number },
  callback: (error: ServiceError | null, response: Res) => void,
) => { on(event: 'metadata', listener: (metadata: Metadata) => void): unknown; cancel(): void };

/**
 * The pet service's retry pushback in `error`'s trailers, in milliseconds: undefined when it sent
 * none, negative ("do not retry") when it is not a non-negative integer, as gRFC A6 reads it.
 */
function pushbackOf(error: ServiceError): number | undefined {
  const value = error.metadata?.get(RETRY_PUSHBACK_METADATA)[0];
  if (value === undefined) return undefined;
  return typeof value === 'string' && /^\d{1,9}$/.test(value) ? Number(value) : -1;
}

/** What a call cancelled through its signal rejects with: grpc-js's own error for `cancel()`. */
function cancelledError(): ServiceError {
  return Object.assign(new Error(`${Status.CANCELLED} CANCELLED: Cancelled on client`), {
    code: Status.CANCELLED,
    details: 'Cancelled on client',
    metadata: new Metadata(),
  });
}

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
 * The pet service client for any process that calls it, the gateway included, with the production
 * defaults: a deadline on every call, reads retried on UNAVAILABLE (unless the pet service pushes
 * back), cancellation through an AbortSignal per call, round_robin over every address
 * of a `dns:///` target, keepalive, quick reconnects. Make one per process and keep it: HTTP/2
 * multiplexes every call over its channel, and a client per request would pay a connection setup
 * each time.
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
  const client = new PetServiceClient(target, credentials, {
    ...defaultChannelOptions(options.keepalive),
    ...options.channelOptions,
  });
  const channel = client.getChannel() as Channel;
  const once = <Req, Res>(
    method: Unary<Req, Res>,
    request: Req,
    metadata: Metadata,
    deadline: number,
    signal: AbortSignal | undefined,
    onMetadata?: (metadata: Metadata) => void,
  ): Promise<Res> =>
    new Promise((resolve, reject) => {
      if (signal?.aborted === true) {
        reject(cancelledError());
        return;
      }
      // grpc-js captures a stack trace (`new Error()`) at every call, only to append it to the
      // message of an error, a cost every read paid. The error's own stack is still captured
      // when a call fails.
      const stackTraceLimit = Error.stackTraceLimit;
      Error.stackTraceLimit = 0;
      let pending: ReturnType<Unary<Req, Res>> | undefined;
      // grpc-js answers cancel() through the callback, with CANCELLED.
      const cancel = signal === undefined ? undefined : (): void => pending?.cancel();
      try {
        pending = method.call(client, request, metadata, { deadline }, (error, response) => {
          if (cancel !== undefined) signal!.removeEventListener('abort', cancel);
          if (error) reject(error);
          else resolve(response);
        });
      } finally {
        Error.stackTraceLimit = stackTraceLimit;
      }
      if (cancel !== undefined) signal!.addEventListener('abort', cancel, { once: true });
      // Initial metadata arrives before the response, so it is read before the promise settles.
      if (onMetadata !== undefined) pending.on('metadata', onMetadata);
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
  const call =
    <Req, Res>(name: PetServiceMethod, method: Unary<Req, Res>, retries: boolean) =>
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
        for (let retry = 0; ; retry += 1) {
          try {
            return await once(method, request, sent, deadline, signal, onMetadata);
          } catch (error) {
            const wait = signal?.aborted === true ? undefined : retryable(error, retry, deadline, retries);
            if (wait === undefined) {
              code = (error as ServiceError).code ?? Status.UNKNOWN;
              throw error;
            }
            try {
              await pause(wait, signal);
            } catch (cancelled) {
              code = Status.CANCELLED;
              throw cancelled;
            }
          }
        }
      } finally {
        if (onCallEnd !== undefined) onCallEnd(name, code, start);
      }
    };
  const retryReads = options.retryReads ?? true;
  const createPet = call<CreatePetRequest, CreatePetResponse>('CreatePet', client.createPet, false);
  return {
    listPets: call<ListPetsRequest, ListPetsResponse>('ListPets', client.listPets, retryReads),
    async createPet(request, metadata, options) {
      let replayed = false;
      const response = await createPet(request, metadata, options, (headers) => {
        replayed = headers.get(IDEMPOTENT_REPLAYED_METADATA)[0] === 'true';
      });
      return { ...response, replayed };
    },
    getPet: call<GetPetRequest, GetPetResponse>('GetPet', client.getPet, retryReads),
    client,
    channel,
    certificates: () => certificates?.current,
    close: () => {
      client.close();
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
