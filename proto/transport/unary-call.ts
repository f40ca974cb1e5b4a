import { type ClientHttp2Stream, constants, type IncomingHttpHeaders, type IncomingHttpStatusHeader, type OutgoingHttpHeaders } from 'node:http2';
import { gunzipSync, inflateSync } from 'node:zlib';
import { Metadata, type ServiceError, status as Status } from '@grpc/grpc-js';
import { callError, CANCELLED_ON_CLIENT, describe } from './call-error';
import type { Connection } from './connection';
import type { DeadlineQueue, Timed } from './deadline-queue';
import type { UnaryCallOptions } from './unary-transport';
import { codeOfHttpStatus, codeOfResetStream, decodeGrpcMessage, grpcTimeout, http2CodeName } from './status-mapping';

/** Where a call goes to be started: the connection pool. */
export interface CallDispatcher {
  /** The transport's deadlines, one timer for every call. */
  readonly deadlines: DeadlineQueue;
  /** Starts `call` on a ready connection, queues it until one is, or fails it. */
  dispatch(call: UnaryCall): void;
  /** `call` left the queue of calls waiting for a connection (its deadline passed, or it was cancelled). */
  forget(call: UnaryCall): void;
}

/**
 * How many times one call is sent again, at once, when its stream was refused (REFUSED_STREAM,
 * or above a GOAWAY's last stream id): RFC 9113 section 8.7 guarantees the server processed
 * nothing of it, so a create is as safe to resend as a read. A connection recycled at its maximum
 * age refuses the streams that cross its GOAWAY; the bound stops a server that refuses every
 * stream from turning one call into a loop.
 */
export const MAX_TRANSPARENT_RESENDS = 2;

const { NGHTTP2_CANCEL, NGHTTP2_NO_ERROR, NGHTTP2_REFUSED_STREAM, NGHTTP2_FLAG_END_STREAM } = constants;

/** The call a stream belongs to: one property on the stream, so its listeners are shared functions, not closures per call. */
const kCall = Symbol('unary call');

type CallStream = ClientHttp2Stream & { [kCall]: UnaryCall };

/**
 * One unary call, from the request's bytes to the response's or a status: its deadline (a local
 * timer, and `grpc-timeout` on each attempt), its cancellation through an AbortSignal (the stream
 * is reset with CANCEL), its attempts (a refused stream is sent again), and the answer read as
 * PROTOCOL-HTTP2.md says: one length-prefixed message, then the status in the trailers (or in the
 * headers alone: trailers-only); every other shape ends the call with the status the protocol gives
 * it. Also the listener of the signal's abort.
 *
 * Every listener here runs from node:http2's events: none may throw (docs/decisions.md, "Library
 * callbacks on the request path").
 */
export class UnaryCall implements Timed {
  settled = false;
  previous: Timed | undefined = undefined;
  next: Timed | undefined = undefined;
  queued = false;
  /** In the pool's queue of calls waiting for a connection. */
  waiting = false;
  private resends = 0;
  private stream: CallStream | undefined;
  private connection: Connection | undefined;
  private responseHeaders: (IncomingHttpHeaders & IncomingHttpStatusHeader) | undefined;
  /** The trailers, or the headers of a trailers-only answer. */
  private trailers: IncomingHttpHeaders | undefined;
  private body: Buffer | Buffer[] | undefined;
  private received = 0;
  /** The first message's length, once its prefix has arrived. */
  private declared = -1;
  private streamError: string | undefined;
  readonly deadline: number;

  constructor(
    private readonly dispatcher: CallDispatcher,
    /** The request headers: the call's metadata and the transport's own, `grpc-timeout` set per attempt. */
    private readonly headers: OutgoingHttpHeaders,
    /** The request message with its 5-byte prefix. */
    private readonly frame: Buffer,
    /** The caller's: the deadline, the signal and the listeners. */
    private readonly options: UnaryCallOptions,
    private readonly maxReceiveBytes: number,
    private readonly resolve: (bytes: Buffer) => void,
    private readonly reject: (error: ServiceError) => void,
  ) {
    this.deadline = options.deadline;
    if (this.deadline !== Number.POSITIVE_INFINITY) dispatcher.deadlines.add(this);
    options.signal?.addEventListener('abort', this);
  }

  /** Starts an attempt on `connection`, which is ready. */
  start(connection: Connection): void {
    this.connection = connection;
    this.responseHeaders = undefined;
    this.trailers = undefined;
    this.body = undefined;
    this.received = 0;
    this.declared = -1;
    this.streamError = undefined;
    if (this.deadline !== Number.POSITIVE_INFINITY) this.headers['grpc-timeout'] = grpcTimeout(this.deadline - Date.now());
    let stream: CallStream;
    try {
      stream = connection.request(this.headers) as CallStream;
    } catch (error) {
      // The stream never existed. A session that had closed under the pool's feet is a refusal
      // like any (the call is sent elsewhere); anything else is this side's fault.
      if (connection.draining) this.refused();
      else this.fail(Status.INTERNAL, `the request could not be sent: ${describe(error)}`);
      return;
    }
    stream[kCall] = this;
    this.stream = stream;
    stream.on('response', onResponse);
    stream.on('trailers', onTrailers);
    stream.on('data', onData);
    stream.on('error', onError);
    stream.on('close', onClose);
    stream.end(this.frame);
  }

  /** The deadline passed. */
  expire(): void {
    this.fail(Status.DEADLINE_EXCEEDED, 'Deadline exceeded');
  }

  /** Fails the call with `code` and `details`, resetting its stream if one is open. */
  fail(code: Status, details: string, metadata?: Metadata): void {
    this.settle(callError(code, details, metadata));
  }

  /** The signal aborted: the stream is reset with CANCEL, and the call rejects with CANCELLED. */
  handleEvent(): void {
    this.fail(Status.CANCELLED, CANCELLED_ON_CLIENT);
  }

  private settle(error: ServiceError | undefined, bytes?: Buffer): void {
    if (this.settled) return;
    this.settled = true;
    this.dispatcher.deadlines.remove(this);
    this.options.signal?.removeEventListener('abort', this);
    if (this.waiting) this.dispatcher.forget(this);
    const { stream } = this;
    if (error !== undefined && stream !== undefined && !stream.closed) stream.close(NGHTTP2_CANCEL);
    if (error === undefined) this.resolve(bytes!);
    else this.reject(error);
  }

  /** The stream was never processed by the server: sent again, on whatever connection the pool picks. */
  private refused(): void {
    this.stream = undefined;
    if (this.resends < MAX_TRANSPARENT_RESENDS && Date.now() < this.deadline) {
      this.resends += 1;
      this.dispatcher.dispatch(this);
      return;
    }
    this.fail(Status.UNAVAILABLE, 'Stream refused by server');
  }

  /** A chunk of the response's body arrived. */
  takeChunk(chunk: Buffer): void {
    if (this.body === undefined) this.body = chunk;
    else if (Array.isArray(this.body)) this.body.push(chunk);
    else this.body = [this.body, chunk];
    this.received += chunk.length;
    if (this.declared < 0) {
      if (this.received < 5) return;
      this.declared = whole(this.body, this.received).readUInt32BE(1);
      if (this.declared > this.maxReceiveBytes) {
        this.fail(Status.RESOURCE_EXHAUSTED, `Received message larger than max (${this.declared} vs. ${this.maxReceiveBytes})`);
        return;
      }
    }
    if (this.received > 5 + this.declared) this.fail(Status.UNIMPLEMENTED, 'Too many responses received');
  }

  /**
   * The response headers arrived (with END_STREAM: a trailers-only answer). Headers that are not
   * gRPC's Response-Headers (`:status` 200 and a gRPC content-type, PROTOCOL-HTTP2.md) come from
   * something else, such as a proxy's error page: the call ends at once with the HTTP status's code
   * (http-grpc-status-mapping.md; 200 UNKNOWN, as grpc-go maps a non-gRPC content-type), and the
   * body, which holds no gRPC message, is not read.
   */
  takeHeaders(headers: IncomingHttpHeaders & IncomingHttpStatusHeader, flags: number): void {
    this.responseHeaders = headers;
    if ((flags & NGHTTP2_FLAG_END_STREAM) !== 0) {
      this.trailers = headers;
      return;
    }
    const httpStatus = headers[':status'];
    const contentType = headers['content-type'];
    const grpcContent = isGrpcContentType(contentType);
    if (httpStatus !== 200 || !grpcContent) {
      const what = grpcContent ? '' : ` with content-type ${contentType ?? '(none)'}`;
      this.fail(codeOfHttpStatus(httpStatus ?? 0), `Received HTTP status code ${httpStatus}${what}`, statusMetadata(headers));
      return;
    }
    const { onHeaders } = this.options;
    if (onHeaders === undefined) return;
    try {
      onHeaders(headerMetadata(headers));
    } catch (error) {
      this.fail(Status.INTERNAL, `onHeaders threw: ${describe(error)}`);
    }
  }

  takeTrailers(trailers: IncomingHttpHeaders): void {
    this.trailers = trailers;
  }

  takeError(error: unknown): void {
    this.streamError ??= describe(error);
  }

  /** The stream closed: the call ends as what arrived says, or is sent again if it was refused. */
  streamClosed(stream: CallStream): void {
    this.connection!.streamEnded();
    if (this.settled) return;
    const connection = this.connection!;
    if (this.trailers !== undefined) {
      this.finish(this.trailers);
      return;
    }
    const rstCode = stream.rstCode ?? NGHTTP2_NO_ERROR;
    const headers = this.responseHeaders;
    if (headers === undefined && (rstCode === NGHTTP2_REFUSED_STREAM || !(stream.id! <= connection.goawayLastStreamId))) {
      this.refused();
      return;
    }
    const lost = connection.lossReason();
    if (lost !== undefined) {
      this.fail(Status.UNAVAILABLE, `Connection dropped: ${lost}`);
      return;
    }
    if (rstCode !== NGHTTP2_NO_ERROR) {
      this.fail(codeOfResetStream(rstCode), `Received RST_STREAM with code ${rstCode} (${http2CodeName(rstCode)})`);
      return;
    }
    const what = headers === undefined ? 'without response headers' : 'without trailers';
    this.fail(Status.INTERNAL, `the stream ended ${what}${this.streamError === undefined ? '' : ` (${this.streamError})`}`);
  }

  /**
   * The answer with its status: its message, if OK, checked as a unary answer; else the status as
   * an error. Without grpc-status the HTTP status's code stands in (http-grpc-status-mapping.md:
   * "200 is UNKNOWN because there should be a grpc-status in case of truly OK response").
   */
  private finish(trailers: IncomingHttpHeaders): void {
    const grpcStatus = trailers['grpc-status'];
    if (grpcStatus === undefined) {
      const httpStatus = this.responseHeaders![':status'] ?? 0;
      this.fail(codeOfHttpStatus(httpStatus), `Received HTTP status code ${httpStatus}`, statusMetadata(trailers));
      return;
    }
    const code = statusCodeOf(grpcStatus);
    if (code !== Status.OK) {
      const message = trailers['grpc-message'];
      this.fail(code, typeof message === 'string' ? decodeGrpcMessage(message) : '', statusMetadata(trailers));
      return;
    }
    if (this.received === 0) {
      this.fail(Status.UNIMPLEMENTED, 'No message received', statusMetadata(trailers));
      return;
    }
    const body = whole(this.body!, this.received);
    if (body.length < 5 || body.length < 5 + this.declared) {
      this.fail(Status.INTERNAL, `the response message was truncated: ${Math.max(0, body.length - 5)} of ${this.declared < 0 ? 'at least 5 prefix' : this.declared} bytes`);
      return;
    }
    const flag = body[0];
    const message = body.subarray(5, 5 + this.declared);
    if (flag === 0) {
      this.succeed(trailers, message);
      return;
    }
    if (flag !== 1) {
      this.fail(Status.INTERNAL, `the response message has compressed flag ${flag}, neither 0 nor 1`);
      return;
    }
    const encoding = this.responseHeaders?.['grpc-encoding'];
    if (encoding !== 'gzip' && encoding !== 'deflate') {
      this.fail(Status.INTERNAL, encoding === undefined || encoding === 'identity' ? 'the response message is compressed, but no grpc-encoding names how' : `the response message is compressed with ${String(encoding)}, which this client does not decode`);
      return;
    }
    let inflated: Buffer;
    try {
      const limits = { maxOutputLength: this.maxReceiveBytes + 1 };
      inflated = encoding === 'gzip' ? gunzipSync(message, limits) : inflateSync(message, limits);
    } catch (error) {
      const tooLarge = (error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE';
      if (tooLarge) this.fail(Status.RESOURCE_EXHAUSTED, `Received message larger than max (more than ${this.maxReceiveBytes} bytes decompressed)`);
      else this.fail(Status.INTERNAL, `the response message could not be decompressed (${encoding}): ${describe(error)}`);
      return;
    }
    if (inflated.length > this.maxReceiveBytes) {
      this.fail(Status.RESOURCE_EXHAUSTED, `Received message larger than max (${inflated.length} vs. ${this.maxReceiveBytes})`);
      return;
    }
    this.succeed(trailers, inflated);
  }

  /** The call succeeded: `onTrailers` hears of its trailers, then it resolves with `message`. */
  private succeed(trailers: IncomingHttpHeaders, message: Buffer): void {
    const { onTrailers } = this.options;
    if (onTrailers !== undefined) {
      try {
        onTrailers(statusMetadata(trailers));
      } catch (error) {
        this.fail(Status.INTERNAL, `onTrailers threw: ${describe(error)}`);
        return;
      }
    }
    this.settle(undefined, message);
  }
}

function onResponse(this: CallStream, headers: IncomingHttpHeaders & IncomingHttpStatusHeader, flags: number): void {
  const call = this[kCall];
  if (!call.settled) call.takeHeaders(headers, flags);
}

function onTrailers(this: CallStream, trailers: IncomingHttpHeaders): void {
  const call = this[kCall];
  if (!call.settled) call.takeTrailers(trailers);
}

function onData(this: CallStream, chunk: Buffer): void {
  const call = this[kCall];
  if (!call.settled) call.takeChunk(chunk);
}

function onError(this: CallStream, error: Error): void {
  this[kCall].takeError(error);
}

function onClose(this: CallStream): void {
  this[kCall].streamClosed(this);
}

/**
 * Whether a response's content-type is gRPC's: `application/grpc`, alone or followed by `+` or `;`
 * (PROTOCOL-HTTP2.md's Content-Type, as grpc-go's `ContentSubtype` reads it). No allocation.
 */
function isGrpcContentType(contentType: string | undefined): boolean {
  if (contentType === undefined || !contentType.startsWith('application/grpc')) return false;
  const next = contentType.charCodeAt(16);
  return Number.isNaN(next) || next === 0x2b || next === 0x3b;
}

/** `body` as one Buffer. */
function whole(body: Buffer | Buffer[], length: number): Buffer {
  return Array.isArray(body) ? Buffer.concat(body, length) : body;
}

/** A `grpc-status` value as a code: a decimal integer of gRPC's codes, else UNKNOWN. */
function statusCodeOf(value: string | string[]): Status {
  const text = Array.isArray(value) ? value[0] : value;
  return text !== undefined && /^\d{1,2}$/.test(text) && Number(text) <= Status.UNAUTHENTICATED ? (Number(text) as Status) : Status.UNKNOWN;
}

/** The metadata of a status: the trailers (or trailers-only headers) but the status itself, as grpc-js gives them. */
function statusMetadata(headers: IncomingHttpHeaders): Metadata {
  const metadata = Metadata.fromHttp2Headers(headers);
  metadata.remove('grpc-status');
  metadata.remove('grpc-message');
  return metadata;
}

/** The response headers as the caller sees them, as grpc-js gives them: without its encoding fields. */
function headerMetadata(headers: IncomingHttpHeaders): Metadata {
  const metadata = Metadata.fromHttp2Headers(headers);
  metadata.remove('grpc-encoding');
  metadata.remove('grpc-accept-encoding');
  return metadata;
}
