import { constants as http2 } from 'node:http2';
import { status as Status } from '@grpc/grpc-js';
import { fieldViolationMetadata, STATUS_DETAILS_METADATA, type UnaryTransportOptions } from '@petstore/proto';
import { expect } from 'chai';
import {
  answer,
  GRPC_RESPONSE_HEADERS,
  MISBEHAVING_SERVICE,
  type Misbehaviour,
  type MisbehavingServer,
  type ReceivedCall,
  startMisbehavingServer,
} from './support/misbehaving-server';
import { grpcFrame } from './support/h2-server';
import { type RawH2Server, startOversizedFrameServer } from './support/raw-h2-server';
import { type CallOutcome, type Closed, type MetadataJson, startTransportProcess, type TransportProcess } from './support/transport-process';
import { waitFor } from './support/wait-for';

/*
 * createUnaryTransport against servers that answer wrongly, each call in one way: every call must
 * end with the status gRPC's HTTP/2 protocol (grpc/grpc doc/PROTOCOL-HTTP2.md, statuscodes.md,
 * http-grpc-status-mapping.md) gives it, within its deadline, and afterwards every stream the
 * transport opened is closed (counted by the server), its connections are closed once it is, and
 * its process holds the resources it held before it made the transport. The transport runs in a
 * process of its own (support/transport-process.ts), so that an error it fails to catch is a crash
 * this suite sees, not one a test runner swallows.
 */

const OK_MESSAGE = Buffer.from('the response');
const OK_TRAILERS = { 'grpc-status': '0' };
const CALL_TIMEOUT_MS = 2_000;
/** For the calls that must end at their deadline. */
const SHORT_TIMEOUT_MS = 300;
/**
 * How late a status at the deadline may come: timers and IPC on a busy host (docs/testing.md,
 * every suite on a busy host). A call the transport does not end at its deadline is never ended
 * by the server either, so what this tells apart is "at the deadline" from "not by it".
 */
const DEADLINE_SLACK_MS = 2_500;
const SETTLE_MS = 2_000;
const FOUR_MIB = 4 * 1024 * 1024;
const NO_CONNECTIONS = { connecting: 0, ready: 0, draining: 0, transient_failure: 0, idle: 0 };

/** The special_status_message of gRPC's interop cases, and the C0 controls, DEL and a percent sign. */
const UNICODE_MESSAGE = '\t\ntest with whitespace\r\nand Unicode BMP ☺ and non-BMP 😈\t\n \u0000\u0001\u001f\u007f 100% sure';

/** Percent-encoding as PROTOCOL-HTTP2.md's Status-Message: UTF-8, every byte outside 0x20-0x7E and `%` encoded. */
function percentEncode(message: string): string {
  return [...Buffer.from(message, 'utf8')].map((byte) => (byte < 0x20 || byte > 0x7e || byte === 0x25 ? `%${byte.toString(16).toUpperCase().padStart(2, '0')}` : String.fromCharCode(byte))).join('');
}

const VIOLATION = { field: 'name', description: 'must be 1 to 100 characters' };
const VIOLATION_MESSAGE = `${VIOLATION.field}: ${VIOLATION.description}`;
const STATUS_DETAILS = fieldViolationMetadata(Status.INVALID_ARGUMENT, VIOLATION_MESSAGE, VIOLATION).get(STATUS_DETAILS_METADATA)[0] as Buffer;

const RST_CODES: ReadonlyArray<readonly [name: string, code: number, status: Status]> = [
  ['NO_ERROR', http2.NGHTTP2_NO_ERROR, Status.INTERNAL],
  ['PROTOCOL_ERROR', http2.NGHTTP2_PROTOCOL_ERROR, Status.INTERNAL],
  ['INTERNAL_ERROR', http2.NGHTTP2_INTERNAL_ERROR, Status.INTERNAL],
  ['FLOW_CONTROL_ERROR', http2.NGHTTP2_FLOW_CONTROL_ERROR, Status.INTERNAL],
  ['SETTINGS_TIMEOUT', http2.NGHTTP2_SETTINGS_TIMEOUT, Status.INTERNAL],
  ['STREAM_CLOSED', http2.NGHTTP2_STREAM_CLOSED, Status.INTERNAL],
  ['FRAME_SIZE_ERROR', http2.NGHTTP2_FRAME_SIZE_ERROR, Status.INTERNAL],
  ['REFUSED_STREAM', http2.NGHTTP2_REFUSED_STREAM, Status.UNAVAILABLE],
  ['CANCEL', http2.NGHTTP2_CANCEL, Status.CANCELLED],
  ['COMPRESSION_ERROR', http2.NGHTTP2_COMPRESSION_ERROR, Status.INTERNAL],
  ['CONNECT_ERROR', http2.NGHTTP2_CONNECT_ERROR, Status.INTERNAL],
  ['ENHANCE_YOUR_CALM', http2.NGHTTP2_ENHANCE_YOUR_CALM, Status.RESOURCE_EXHAUSTED],
  ['INADEQUATE_SECURITY', http2.NGHTTP2_INADEQUATE_SECURITY, Status.PERMISSION_DENIED],
  ['HTTP_1_1_REQUIRED', http2.NGHTTP2_HTTP_1_1_REQUIRED, Status.INTERNAL],
];

/** gRPC's "HTTP to gRPC Status Code Mapping", for answers without grpc-status. */
const HTTP_STATUSES: ReadonlyArray<readonly [httpStatus: number, status: Status]> = [
  [400, Status.INTERNAL],
  [401, Status.UNAUTHENTICATED],
  [403, Status.PERMISSION_DENIED],
  [404, Status.UNIMPLEMENTED],
  [429, Status.UNAVAILABLE],
  [431, Status.INTERNAL],
  [500, Status.UNKNOWN],
  [502, Status.UNAVAILABLE],
  [503, Status.UNAVAILABLE],
  [504, Status.UNAVAILABLE],
];

/**
 * Two calls held until both arrive on one connection; then a GOAWAY whose last stream id is the
 * lower one's, that call answered `first:<request>` on it, and any call on another connection
 * `again:<request>`.
 */
function goawayBetween(): Misbehaviour {
  const held: ReceivedCall[] = [];
  return (call) => {
    if (held.length === 2 || (held.length === 1 && held[0]!.session !== call.session)) {
      answer(call.stream, GRPC_RESPONSE_HEADERS, [grpcFrame(Buffer.concat([Buffer.from('again:'), call.request]))], OK_TRAILERS);
      return;
    }
    held.push(call);
    if (held.length < 2) return;
    const [below, above] = [...held].sort((a, b) => a.stream.id! - b.stream.id!) as [ReceivedCall, ReceivedCall];
    below.stream.session!.goaway(http2.NGHTTP2_NO_ERROR, below.stream.id!);
    answer(below.stream, GRPC_RESPONSE_HEADERS, [grpcFrame(Buffer.concat([Buffer.from('first:'), below.request]))], OK_TRAILERS);
    // The stream above the GOAWAY is the client's to give up; once the one below is done, it is
    // reset with CANCEL, which fails the call should the client have kept waiting on it.
    below.stream.on('close', () => above.stream.close(http2.NGHTTP2_CANCEL));
  };
}

/**
 * The second call on a connection gets a GOAWAY whose last stream id is the first call's, and no
 * answer; every other call is answered. (node:http2 cannot send a last stream id of 0 once a
 * stream has arrived: it puts the last one processed instead, so the connection's first call is
 * answered and its second is the one left out.)
 */
function goawayAboveTheFirst(): Misbehaviour {
  const sessionsAway = new Set<number>();
  return (call, server) => {
    if (call.stream.id! === 1 || sessionsAway.has(call.session)) {
      ok(call, server);
      return;
    }
    sessionsAway.add(call.session);
    call.stream.session!.goaway(http2.NGHTTP2_NO_ERROR, call.stream.id! - 2);
  };
}

const ok: Misbehaviour = ({ stream }) => answer(stream, GRPC_RESPONSE_HEADERS, [grpcFrame(OK_MESSAGE)], OK_TRAILERS);

const behaviours: Record<string, Misbehaviour> = {
  ok,
  'no-trailers': ({ stream }) => answer(stream, GRPC_RESPONSE_HEADERS, [grpcFrame(OK_MESSAGE)]),
  'no-trailers-no-message': ({ stream }) => answer(stream, GRPC_RESPONSE_HEADERS, [Buffer.alloc(0)]),
  ...Object.fromEntries(RST_CODES.map(([name, code]) => [`rst-${name}`, ({ stream }: ReceivedCall) => stream.close(code)])),
  ...Object.fromEntries(
    RST_CODES.map(([name, code]) => [
      `rst-after-message-${name}`,
      ({ stream }: ReceivedCall) => {
        // Waiting for trailers keeps END_STREAM off the DATA, which would close the stream first.
        stream.respond(GRPC_RESPONSE_HEADERS, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.close(code));
        stream.end(grpcFrame(OK_MESSAGE));
      },
    ]),
  ),
  'refused-once': (call, server) => (call.attempt === 1 ? call.stream.close(http2.NGHTTP2_REFUSED_STREAM) : ok(call, server)),
  'goaway-between-two-calls': goawayBetween(),
  'goaway-above-the-first': goawayAboveTheFirst(),
  'headers-never-sent': () => {},
  'trailers-never-sent': ({ stream }) => {
    stream.respond(GRPC_RESPONSE_HEADERS);
    stream.write(grpcFrame(OK_MESSAGE));
  },
  'connection-lost': ({ stream }) => {
    stream.respond(GRPC_RESPONSE_HEADERS);
    stream.write(grpcFrame(OK_MESSAGE), () => stream.session!.destroy());
  },
  'truncated-message': ({ stream }) => answer(stream, GRPC_RESPONSE_HEADERS, [grpcFrame(OK_MESSAGE).subarray(0, 9)], OK_TRAILERS),
  'truncated-prefix': ({ stream }) => answer(stream, GRPC_RESPONSE_HEADERS, [grpcFrame(OK_MESSAGE).subarray(0, 3)], OK_TRAILERS),
  'compressed-without-encoding': ({ stream }) => answer(stream, GRPC_RESPONSE_HEADERS, [grpcFrame(OK_MESSAGE, true)], OK_TRAILERS),
  'compressed-with-identity-encoding': ({ stream }) => answer(stream, { ...GRPC_RESPONSE_HEADERS, 'grpc-encoding': 'identity' }, [grpcFrame(OK_MESSAGE, true)], OK_TRAILERS),
  'message-of-4-mib': ({ stream }) => answer(stream, GRPC_RESPONSE_HEADERS, [grpcFrame(Buffer.alloc(FOUR_MIB, 7))], OK_TRAILERS),
  'message-over-4-mib': ({ stream }) => answer(stream, GRPC_RESPONSE_HEADERS, [grpcFrame(Buffer.alloc(FOUR_MIB + 1, 7))], OK_TRAILERS),
  'message-of-1-kib': ({ stream }) => answer(stream, GRPC_RESPONSE_HEADERS, [grpcFrame(Buffer.alloc(1024, 7))], OK_TRAILERS),
  'message-over-1-kib': ({ stream }) => answer(stream, GRPC_RESPONSE_HEADERS, [grpcFrame(Buffer.alloc(1025, 7))], OK_TRAILERS),
  ...Object.fromEntries(
    HTTP_STATUSES.map(([httpStatus]) => [
      `http-${httpStatus}`,
      ({ stream }: ReceivedCall) => answer(stream, { ':status': httpStatus, 'content-type': 'text/plain' }, [Buffer.from(`${httpStatus} from a proxy`)]),
    ]),
  ),
  'http-503-grpc-content-type': ({ stream }) => answer(stream, { ':status': 503, 'content-type': 'application/grpc' }, []),
  'json-content-type': ({ stream }) => answer(stream, { ':status': 200, 'content-type': 'application/json' }, [Buffer.from('{"ok":true}')]),
  'html-content-type-grpc-status': ({ stream }) => answer(stream, { ':status': 200, 'content-type': 'text/html' }, [Buffer.from('<p>hello</p>')], OK_TRAILERS),
  'no-grpc-status': ({ stream }) => answer(stream, GRPC_RESPONSE_HEADERS, []),
  'grpc-status-not-a-number': ({ stream }) => answer(stream, { ...GRPC_RESPONSE_HEADERS, 'grpc-status': 'abc' }, []),
  'unicode-message-trailers-only': ({ stream }) => answer(stream, { ...GRPC_RESPONSE_HEADERS, 'grpc-status': '2', 'grpc-message': percentEncode(UNICODE_MESSAGE) }, []),
  'unicode-message-in-trailers': ({ stream }) => answer(stream, GRPC_RESPONSE_HEADERS, [], { 'grpc-status': '2', 'grpc-message': percentEncode(UNICODE_MESSAGE) }),
  'broken-percent-encoding': ({ stream }) => answer(stream, GRPC_RESPONSE_HEADERS, [], { 'grpc-status': '2', 'grpc-message': 'bad %ZZ and %E2%98 and %' }),
  'status-details-unpadded': ({ stream }) =>
    answer(stream, GRPC_RESPONSE_HEADERS, [], {
      'grpc-status': String(Status.INVALID_ARGUMENT),
      'grpc-message': percentEncode(VIOLATION_MESSAGE),
      [STATUS_DETAILS_METADATA]: STATUS_DETAILS.toString('base64').replace(/=+$/, ''),
    }),
  'status-details-padded': ({ stream }) =>
    answer(stream, { ...GRPC_RESPONSE_HEADERS, 'grpc-status': String(Status.INVALID_ARGUMENT), 'grpc-message': percentEncode(VIOLATION_MESSAGE), [STATUS_DETAILS_METADATA]: STATUS_DETAILS.toString('base64') }, []),
  'two-responses': ({ stream }) => answer(stream, GRPC_RESPONSE_HEADERS, [grpcFrame(OK_MESSAGE), grpcFrame(OK_MESSAGE)], OK_TRAILERS),
  'no-response': ({ stream }) => answer(stream, GRPC_RESPONSE_HEADERS, [], OK_TRAILERS),
  'oversized-headers': ({ stream }) => answer(stream, { ...GRPC_RESPONSE_HEADERS, 'x-oversized': 'x'.repeat(100 * 1024) }, [grpcFrame(OK_MESSAGE)], OK_TRAILERS),
  'oversized-trailers': ({ stream }) => answer(stream, GRPC_RESPONSE_HEADERS, [grpcFrame(OK_MESSAGE)], { ...OK_TRAILERS, 'x-oversized': 'x'.repeat(100 * 1024) }),
  'too-many-headers': ({ stream }) =>
    answer(stream, { ...GRPC_RESPONSE_HEADERS, ...Object.fromEntries(Array.from({ length: 1000 }, (_, index) => [`x-header-${index}`, 'value'])) }, [grpcFrame(OK_MESSAGE)], OK_TRAILERS),
};

describe('createUnaryTransport against a misbehaving HTTP/2 server', function () {
  this.timeout(20_000);
  let server: MisbehavingServer;
  let transport: TransportProcess;

  before(async () => {
    server = await startMisbehavingServer(behaviours);
    transport = await startTransportProcess();
  });

  after(async () => {
    await server?.close();
    if (transport === undefined) return;
    const exit = await transport.stop();
    expect(exit, `the transport process ended on its own once disconnected; its stderr:\n${transport.stderr.join('\n')}`).to.deep.equal({ code: 0, signal: null, killed: false });
    expect(transport.stderr, 'the transport process wrote nothing to stderr').to.deep.equal([]);
  });

  afterEach(async function () {
    if (this.currentTest?.state !== 'failed') return;
    server.dropSessions();
    await transport.discard();
  });

  interface RunOptions {
    readonly timeoutMs?: number;
    readonly transport?: UnaryTransportOptions;
    readonly requests?: readonly Buffer[];
    /** Each call once the one before has ended, rather than all at once. */
    readonly oneAfterAnother?: boolean;
    /** Once the calls have ended and the server has seen every stream closed. */
    readonly beforeClose?: () => Promise<void>;
  }

  interface Run {
    readonly outcomes: CallOutcome[];
    readonly closed: Closed;
  }

  /**
   * Makes each call (at once, on one transport), waits for the server to see every stream closed,
   * closes the transport, and checks that every connection and resource it held is gone.
   */
  async function run(methods: readonly string[], options: RunOptions = {}): Promise<Run> {
    expect(server.openSessions(), 'no connection is left from an earlier test').to.equal(0);
    const streamsBefore = server.streams.length;
    await transport.open(`127.0.0.1:${server.port}`, options.transport);
    const call = (method: string, index: number): Promise<CallOutcome> =>
      transport.call({
        path: `/${MISBEHAVING_SERVICE}/${method}`,
        request: (options.requests?.[index] ?? Buffer.from('request')).toString('base64'),
        metadata: [],
        timeoutMs: options.timeoutMs ?? CALL_TIMEOUT_MS,
      });
    const outcomes: CallOutcome[] = [];
    if (options.oneAfterAnother === true) for (const [index, method] of methods.entries()) outcomes.push(await call(method, index));
    else outcomes.push(...(await Promise.all(methods.map(call))));
    await waitFor(() => server.openStreams() === 0, SETTLE_MS, () => `streams still open on the server: ${JSON.stringify(server.streams.slice(streamsBefore).filter((record) => !record.closed))}`);
    await options.beforeClose?.();
    const closed = await transport.close();
    expect(
      { state: closed.state, connections: closed.connections, activeResources: closed.activeResources },
      "after close(): state(), connections(), and the transport process's active resources (against before it made the transport)",
    ).to.deep.equal({ state: 'SHUTDOWN', connections: NO_CONNECTIONS, activeResources: closed.baseline });
    await waitFor(() => server.openSessions() === 0, SETTLE_MS, () => `${server.openSessions()} connections still open on the server after close()`);
    return { outcomes, closed };
  }

  /** The one call's failure, checked to be shaped as grpc-js's ServiceError and to have come before its deadline. */
  async function failure(method: string, options: RunOptions = {}): Promise<Extract<CallOutcome, { ok: false }>['error'] & { elapsedMs: number }> {
    const {
      outcomes: [outcome],
    } = await run([method], options);
    if (outcome!.ok) return expect.fail(`the call succeeded with ${Buffer.from(outcome!.response, 'base64').length} bytes`);
    const { error, elapsedMs } = outcome!;
    expect(error.isError, 'rejected with an Error').to.equal(true);
    expect(error.metadataIsMetadata, 'its metadata is a grpc-js Metadata').to.equal(true);
    expect(error.message).to.equal(`${error.code} ${Status[error.code]}: ${error.details}`);
    expect(elapsedMs, 'ms until the call ended').to.be.below(options.timeoutMs ?? CALL_TIMEOUT_MS);
    return { ...error, elapsedMs };
  }

  async function success(method: string, options: RunOptions = {}): Promise<Buffer> {
    const {
      outcomes: [outcome],
    } = await run([method], options);
    if (!outcome!.ok) return expect.fail(`the call failed: ${outcome!.error.message}`);
    expect(outcome!.isBuffer, 'resolved with a Buffer').to.equal(true);
    expect(outcome!.elapsedMs, 'ms until the call ended').to.be.below(options.timeoutMs ?? CALL_TIMEOUT_MS);
    return Buffer.from(outcome!.response, 'base64');
  }

  const streamsOf = (method: string) => server.streams.filter((record) => record.method === method);

  it('answers a well-formed call (the baseline the cases below break)', async () => {
    expect(await success('ok')).to.deep.equal(OK_MESSAGE);
  });

  describe('missing trailers', () => {
    it('a response whose DATA ends the stream, without trailers, is INTERNAL', async () => {
      expect((await failure('no-trailers')).code).to.equal(Status.INTERNAL);
    });

    it('headers then an empty DATA that ends the stream, without trailers, is INTERNAL', async () => {
      expect((await failure('no-trailers-no-message')).code).to.equal(Status.INTERNAL);
    });
  });

  describe('RST_STREAM from the server (PROTOCOL-HTTP2.md, "Errors")', () => {
    for (const [name, code, status] of RST_CODES) {
      if (name === 'REFUSED_STREAM') continue;
      it(`before any response: ${name} is ${Status[status]}`, async () => {
        expect((await failure(`rst-${name}`)).code).to.equal(status);
        expect(streamsOf(`rst-${name}`).map((record) => record.rstCode), 'the one stream, reset with that code').to.deep.equal([code]);
      });
    }

    it('before any response: REFUSED_STREAM is sent again, transparently, and answered', async () => {
      expect(await success('refused-once')).to.deep.equal(OK_MESSAGE);
      expect(streamsOf('refused-once').map((record) => record.rstCode)).to.deep.equal([http2.NGHTTP2_REFUSED_STREAM, http2.NGHTTP2_NO_ERROR]);
    });

    // gRFC A6 retries a stream the server refused transparently once; a client that kept resending
    // would hammer a server that refuses everything until each call's deadline.
    it('before any response: REFUSED_STREAM every time is UNAVAILABLE, after a bounded number of attempts, not at the deadline', async () => {
      const error = await failure('rst-REFUSED_STREAM');
      expect(error.code).to.equal(Status.UNAVAILABLE);
      expect(streamsOf('rst-REFUSED_STREAM').length, 'attempts').to.be.within(2, 5);
      expect(error.elapsedMs).to.be.below(CALL_TIMEOUT_MS / 2);
    });

    for (const [name, code, status] of RST_CODES) {
      if (name === 'REFUSED_STREAM') continue;
      it(`after the headers and a whole message: ${name} is ${Status[status]}, not the message`, async () => {
        expect((await failure(`rst-after-message-${name}`)).code).to.equal(status);
        expect(streamsOf(`rst-after-message-${name}`).map((record) => record.rstCode), 'the one stream, reset with that code').to.deep.equal([code]);
      });
    }
  });

  describe('GOAWAY mid-call', () => {
    it('of two calls on a connection, the one below the last stream id finishes there, the one above is sent again on a new connection', async () => {
      const requests = [Buffer.from('A'), Buffer.from('B')];
      const { outcomes } = await run(['goaway-between-two-calls', 'goaway-between-two-calls'], { requests });
      const records = streamsOf('goaway-between-two-calls');
      const first = records[0]!.session;
      expect(records.map((record) => record.session)).to.have.members([first, first, first + 1]);
      const [below, above] = records.filter((record) => record.session === first).sort((a, b) => a.id - b.id) as [(typeof records)[0], (typeof records)[0]];
      expect(below.rstCode, 'the call below finished cleanly').to.equal(http2.NGHTTP2_NO_ERROR);
      const responses = outcomes.map((outcome) => (outcome.ok ? Buffer.from(outcome.response, 'base64').toString() : outcome.error.message));
      // The request each stream carried is only known by which response the call got.
      const firstIndex = responses.findIndex((response) => response.startsWith('first:'));
      expect(firstIndex, `responses ${JSON.stringify(responses)}`).to.not.equal(-1);
      const again = responses[1 - firstIndex];
      expect(again, 'the call above the last stream id, answered on the new connection').to.equal(`again:${requests[1 - firstIndex]}`);
      expect(responses[firstIndex]).to.equal(`first:${requests[firstIndex]}`);
      expect(above.closed).to.equal(true);
    });

    it('a call above the last stream id of a GOAWAY that came before any answer to it is sent again on a new connection', async () => {
      const accepted = server.sessionsAccepted;
      const { outcomes } = await run(['goaway-above-the-first', 'goaway-above-the-first'], { oneAfterAnother: true });
      expect(outcomes.map((outcome) => (outcome.ok ? Buffer.from(outcome.response, 'base64') : outcome.error.message))).to.deep.equal([OK_MESSAGE, OK_MESSAGE]);
      const records = streamsOf('goaway-above-the-first');
      expect(records.map(({ session, id }) => ({ session: session - accepted, id }))).to.deep.equal([
        { session: 0, id: 1 },
        { session: 0, id: 3 },
        { session: 1, id: 1 },
      ]);
    });

    it('the connection the server sent GOAWAY on is closed by the client once its streams are done, without waiting for close()', async () => {
      await run(['goaway-above-the-first', 'goaway-above-the-first'], {
        oneAfterAnother: true,
        beforeClose: async () => {
          // The server keeps its side open after its GOAWAY: only the client can close it.
          await waitFor(() => server.openSessions() === 1, SETTLE_MS, () => `${server.openSessions()} connections open on the server, expected only the new one`);
          expect((await transport.inspect()).connections).to.deep.equal({ ...NO_CONNECTIONS, ready: 1 });
        },
      });
    });
  });

  describe('no answer: the deadline ends the call', () => {
    for (const method of ['headers-never-sent', 'trailers-never-sent']) {
      it(`${method}: DEADLINE_EXCEEDED at the deadline, and the stream reset with CANCEL`, async () => {
        const {
          outcomes: [outcome],
        } = await run([method], { timeoutMs: SHORT_TIMEOUT_MS });
        if (outcome!.ok) return expect.fail('the call succeeded');
        expect(outcome!.error.code).to.equal(Status.DEADLINE_EXCEEDED);
        expect(outcome!.elapsedMs, 'not before the deadline').to.be.at.least(SHORT_TIMEOUT_MS - 5);
        expect(outcome!.elapsedMs, 'at the deadline').to.be.below(SHORT_TIMEOUT_MS + DEADLINE_SLACK_MS);
        expect(streamsOf(method).map((record) => record.rstCode)).to.deep.equal([http2.NGHTTP2_CANCEL]);
      });
    }
  });

  it('the connection lost after the headers and a message is UNAVAILABLE (statuscodes.md: the connection breaks)', async () => {
    expect((await failure('connection-lost')).code).to.equal(Status.UNAVAILABLE);
  });

  describe('broken length-prefixed messages', () => {
    it('a message cut short before the trailers is INTERNAL', async () => {
      expect((await failure('truncated-message')).code).to.equal(Status.INTERNAL);
    });

    it('a length prefix cut short before the trailers is INTERNAL', async () => {
      expect((await failure('truncated-prefix')).code).to.equal(Status.INTERNAL);
    });

    it('the compressed flag without grpc-encoding is INTERNAL', async () => {
      expect((await failure('compressed-without-encoding')).code).to.equal(Status.INTERNAL);
    });

    it('the compressed flag with grpc-encoding identity is INTERNAL', async () => {
      expect((await failure('compressed-with-identity-encoding')).code).to.equal(Status.INTERNAL);
    });
  });

  describe('the response size limit', () => {
    it('a message of exactly 4 MiB is received whole', async () => {
      expect(await success('message-of-4-mib')).to.deep.equal(Buffer.alloc(FOUR_MIB, 7));
    });

    it('a message of 4 MiB and one byte is RESOURCE_EXHAUSTED', async () => {
      expect((await failure('message-over-4-mib')).code).to.equal(Status.RESOURCE_EXHAUSTED);
    });

    it('maxReceiveMessageBytes: 1024 takes a 1024-byte message and refuses a 1025-byte one RESOURCE_EXHAUSTED', async () => {
      const options = { transport: { maxReceiveMessageBytes: 1024 } };
      expect(await success('message-of-1-kib', options)).to.deep.equal(Buffer.alloc(1024, 7));
      expect((await failure('message-over-1-kib', options)).code).to.equal(Status.RESOURCE_EXHAUSTED);
    });
  });

  describe('an HTTP status without grpc-status (http-grpc-status-mapping.md)', () => {
    for (const [httpStatus, status] of HTTP_STATUSES) {
      it(`${httpStatus}, text/plain, is ${Status[status]}`, async () => {
        expect((await failure(`http-${httpStatus}`)).code).to.equal(status);
      });
    }

    it('503 with content-type application/grpc, trailers-only without grpc-status, is UNAVAILABLE', async () => {
      expect((await failure('http-503-grpc-content-type')).code).to.equal(Status.UNAVAILABLE);
    });

    it('200 with content-type application/grpc, trailers-only without grpc-status, is UNKNOWN', async () => {
      expect((await failure('no-grpc-status')).code).to.equal(Status.UNKNOWN);
    });
  });

  describe('a content-type that is not gRPC', () => {
    it('200 application/json is UNKNOWN, whatever its body', async () => {
      expect((await failure('json-content-type')).code).to.equal(Status.UNKNOWN);
    });

    it('200 text/html is not taken as gRPC, even with grpc-status 0 in its trailers: UNKNOWN, by its HTTP status', async () => {
      // As grpc-go: the answer ends at its headers, mapped from HTTP 200 (grpc-java would say
      // INTERNAL, for the content-type); docs/grpc-client.md promises this mapping.
      expect((await failure('html-content-type-grpc-status')).code).to.equal(Status.UNKNOWN);
    });
  });

  describe('status and details', () => {
    it('a grpc-status that is not a number is UNKNOWN', async () => {
      expect((await failure('grpc-status-not-a-number')).code).to.equal(Status.UNKNOWN);
    });

    for (const method of ['unicode-message-trailers-only', 'unicode-message-in-trailers']) {
      it(`${method}: a percent-encoded grpc-message with Unicode and control characters round-trips`, async () => {
        const error = await failure(method);
        expect(error.code).to.equal(Status.UNKNOWN);
        expect(error.details).to.equal(UNICODE_MESSAGE);
      });
    }

    it('a grpc-message with broken percent-encoding is kept, not thrown away', async () => {
      const error = await failure('broken-percent-encoding');
      expect(error.code).to.equal(Status.UNKNOWN);
      expect(error.details).to.match(/^bad .* and .* and /);
    });

    for (const method of ['status-details-unpadded', 'status-details-padded']) {
      it(`${method}: grpc-status-details-bin decodes to the field violation (fieldViolationOf)`, async () => {
        const error = await failure(method);
        expect(error.code).to.equal(Status.INVALID_ARGUMENT);
        expect(error.details).to.equal(VIOLATION_MESSAGE);
        expect(error.fieldViolation).to.deep.equal(VIOLATION);
        expect(metadataValue(error.metadata, STATUS_DETAILS_METADATA)).to.deep.equal([{ base64: STATUS_DETAILS.toString('base64') }]);
      });
    }
  });

  describe('response cardinality (statuscodes.md: UNIMPLEMENTED on the client)', () => {
    it('two responses to a unary call are UNIMPLEMENTED', async () => {
      expect((await failure('two-responses')).code).to.equal(Status.UNIMPLEMENTED);
    });

    it('OK without a response is UNIMPLEMENTED', async () => {
      expect((await failure('no-response')).code).to.equal(Status.UNIMPLEMENTED);
    });
  });

  describe('oversized headers and frames', () => {
    // gRPC leaves the status of metadata over a client's limit open: grpc-core says
    // RESOURCE_EXHAUSTED, grpc-js INTERNAL; nghttp2 (node:http2) fails a header block over
    // SETTINGS_MAX_HEADER_LIST_SIZE as a protocol error that ends the whole connection, which
    // statuscodes.md calls UNAVAILABLE. Any of them, but never the answer.
    const OVER_LIMIT = [Status.RESOURCE_EXHAUSTED, Status.INTERNAL, Status.UNAVAILABLE];

    it('response headers of 100 KiB are refused: RESOURCE_EXHAUSTED, INTERNAL or UNAVAILABLE', async () => {
      expect((await failure('oversized-headers')).code).to.be.oneOf(OVER_LIMIT);
    });

    it('trailers of 100 KiB are refused: RESOURCE_EXHAUSTED, INTERNAL or UNAVAILABLE', async () => {
      expect((await failure('oversized-trailers')).code).to.be.oneOf(OVER_LIMIT);
    });

    it('1000 response headers are refused: RESOURCE_EXHAUSTED, INTERNAL or UNAVAILABLE', async () => {
      expect((await failure('too-many-headers')).code).to.be.oneOf(OVER_LIMIT);
    });

    describe('a DATA frame over the SETTINGS_MAX_FRAME_SIZE the client sent', () => {
      let raw: RawH2Server;
      before(async () => {
        raw = await startOversizedFrameServer();
      });
      after(() => raw?.close());

      it('is a connection error: the client sends GOAWAY FRAME_SIZE_ERROR and closes the connection; the call is UNAVAILABLE (statuscodes.md: the connection breaks)', async () => {
        await transport.open(`127.0.0.1:${raw.port}`);
        const outcome = await transport.call({ path: `/${MISBEHAVING_SERVICE}/any`, request: '', metadata: [], timeoutMs: CALL_TIMEOUT_MS });
        if (outcome.ok) return expect.fail('the call succeeded');
        expect(outcome.error.code).to.equal(Status.UNAVAILABLE);
        expect(outcome.elapsedMs).to.be.below(CALL_TIMEOUT_MS);
        expect(raw.oversizedFrames).to.have.length(1);
        // The client may connect again at once (round robin keeps every address connected): the
        // first connection must close, whatever follows it.
        await waitFor(() => raw.socketsClosed >= 1, SETTLE_MS, () => 'the connection that got the oversized frame is still open');
        expect(raw.goawayCodes).to.deep.equal([http2.NGHTTP2_FRAME_SIZE_ERROR]);
        const closed = await transport.close();
        expect({ state: closed.state, connections: closed.connections, activeResources: closed.activeResources }).to.deep.equal({
          state: 'SHUTDOWN',
          connections: NO_CONNECTIONS,
          activeResources: closed.baseline,
        });
        await waitFor(() => raw.openSockets() === 0, SETTLE_MS, () => `${raw.openSockets()} connections still open after close()`);
      });
    });
  });
});

function metadataValue(metadata: MetadataJson, key: string): MetadataJson[number][1] | undefined {
  return metadata.find(([name]) => name === key)?.[1];
}
