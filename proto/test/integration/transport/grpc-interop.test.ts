import { Metadata, status as Status } from '@grpc/grpc-js';
import { createUnaryTransport, type UnaryCallOptions, type UnaryTransport, type UnaryTransportOptions } from '@petstore/proto';
import { expect } from 'chai';
import { COMPRESSABLE, decodeSimpleResponse, encodeSimpleRequest } from './support/grpc-testing-messages';
import { INTEROP_SERVER_NAME, type InteropFiles, type InteropServer, interopFilesOrSkip, startInteropServer } from './support/interop-server';
import { failureOf } from './support/call-failure';

/*
 * gRPC's interop cases that apply to a unary client (grpc/grpc doc/interop-test-descriptions.md;
 * special_status_message as grpc-go's interop client runs it), made through createUnaryTransport
 * against grpc-go's interop server, plaintext and TLS: a server nobody here wrote.
 */

const EMPTY_CALL = '/grpc.testing.TestService/EmptyCall';
const UNARY_CALL = '/grpc.testing.TestService/UnaryCall';
const LARGE_REQUEST_BYTES = 271828;
const LARGE_RESPONSE_BYTES = 314159;
const ECHO_INITIAL = 'x-grpc-test-echo-initial';
const ECHO_TRAILING = 'x-grpc-test-echo-trailing-bin';
const CALL_TIMEOUT_MS = 10_000;

function unaryCases(useTls: boolean): void {
  let files: InteropFiles;
  let server: InteropServer;
  let transport: UnaryTransport;
  const call = (path: string, request: Uint8Array, metadata = new Metadata(), options: Partial<UnaryCallOptions> = {}): Promise<Buffer> =>
    transport.call(path, request, metadata, { deadline: Date.now() + CALL_TIMEOUT_MS, ...options });

  before(async function () {
    files = interopFilesOrSkip(this);
    server = await startInteropServer(files, useTls);
    const options: UnaryTransportOptions = useTls ? { tls: { caFile: files.caFile }, serverNameOverride: INTEROP_SERVER_NAME } : {};
    transport = createUnaryTransport(`127.0.0.1:${server.port}`, options);
  });

  after(async () => {
    transport?.close();
    await server?.stop();
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') console.warn(`      grpc-go interop server log (last lines):\n${server.log.slice(-20).join('\n')}`);
  });

  it('empty_unary: EmptyCall answers an Empty, zero bytes', async () => {
    const response = await call(EMPTY_CALL, new Uint8Array(0));
    expect(Buffer.isBuffer(response)).to.equal(true);
    expect(response.length).to.equal(0);
  });

  it('large_unary: 271828 zero bytes out, a 314159-byte COMPRESSABLE payload of zeros back', async () => {
    const request = encodeSimpleRequest({ responseSize: LARGE_RESPONSE_BYTES, payloadBody: new Uint8Array(LARGE_REQUEST_BYTES) });
    const { payload } = decodeSimpleResponse(await call(UNARY_CALL, request));
    expect(payload?.type).to.equal(COMPRESSABLE);
    expect(payload?.body.length).to.equal(LARGE_RESPONSE_BYTES);
    expect(payload?.body.every((byte) => byte === 0)).to.equal(true);
  });

  it('status_code_and_message (unary): the echoed code 2 and message come back as the status', async () => {
    const request = encodeSimpleRequest({ responseStatus: { code: 2, message: 'test status message' } });
    const error = await failureOf(call(UNARY_CALL, request));
    expect(error).to.be.an.instanceOf(Error);
    expect(error.code).to.equal(Status.UNKNOWN);
    expect(error.details).to.equal('test status message');
    expect(error.message).to.equal('2 UNKNOWN: test status message');
    expect(error.metadata).to.be.an.instanceOf(Metadata);
  });

  it('special_status_message: whitespace, a BMP and a non-BMP character round-trip in the status message', async () => {
    const message = '\t\ntest with whitespace\r\nand Unicode BMP ☺ and non-BMP 😈\t\n';
    const error = await failureOf(call(UNARY_CALL, encodeSimpleRequest({ responseStatus: { code: 2, message } })));
    expect(error.code).to.equal(Status.UNKNOWN);
    expect(error.details).to.equal(message);
  });

  it('custom_metadata (unary): x-grpc-test-echo-initial comes back in the headers, x-grpc-test-echo-trailing-bin in the trailers', async () => {
    const metadata = new Metadata();
    metadata.set(ECHO_INITIAL, 'test_initial_metadata_value');
    metadata.set(ECHO_TRAILING, Buffer.from([0xab, 0xab, 0xab]));
    const headers: Metadata[] = [];
    const trailers: Metadata[] = [];
    const request = encodeSimpleRequest({ responseSize: LARGE_RESPONSE_BYTES, payloadBody: new Uint8Array(LARGE_REQUEST_BYTES) });
    const response = await call(UNARY_CALL, request, metadata, { onHeaders: (h) => headers.push(h), onTrailers: (t) => trailers.push(t) });
    expect(decodeSimpleResponse(response).payload?.body.length).to.equal(LARGE_RESPONSE_BYTES);
    expect(headers, 'onHeaders calls').to.have.length(1);
    expect(headers[0]!.get(ECHO_INITIAL)).to.deep.equal(['test_initial_metadata_value']);
    expect(trailers, 'onTrailers calls: the transport gave no way to read the trailers of a successful call').to.have.length(1);
    expect(trailers[0]!.get(ECHO_TRAILING)).to.deep.equal([Buffer.from([0xab, 0xab, 0xab])]);
  });

  it('custom_metadata on a failed call: the echoed -bin trailer is in the error metadata, decoded', async () => {
    // Not an interop case: the same echo, where the transport's API hands trailers over today.
    const metadata = new Metadata();
    metadata.set(ECHO_TRAILING, Buffer.from([0xab, 0xab, 0xab]));
    const error = await failureOf(call(UNARY_CALL, encodeSimpleRequest({ responseStatus: { code: 2, message: 'echo' } }), metadata));
    expect(error.code).to.equal(Status.UNKNOWN);
    expect(error.metadata.get(ECHO_TRAILING)).to.deep.equal([Buffer.from([0xab, 0xab, 0xab])]);
  });

  if (useTls) {
    it('the certificate is checked: a server name it does not hold fails the call UNAVAILABLE', async () => {
      const misnamed = createUnaryTransport(`127.0.0.1:${server.port}`, { tls: { caFile: files.caFile }, serverNameOverride: 'foo.test.example.com' });
      try {
        const error = await failureOf(misnamed.call(EMPTY_CALL, new Uint8Array(0), new Metadata(), { deadline: Date.now() + CALL_TIMEOUT_MS }));
        expect(error.code).to.equal(Status.UNAVAILABLE);
      } finally {
        misnamed.close();
      }
    });
  }

  it('unimplemented_method: grpc.testing.TestService/UnimplementedCall is UNIMPLEMENTED', async () => {
    const error = await failureOf(call('/grpc.testing.TestService/UnimplementedCall', new Uint8Array(0)));
    expect(error.code).to.equal(Status.UNIMPLEMENTED);
  });

  it('unimplemented_service: grpc.testing.UnimplementedService/UnimplementedCall is UNIMPLEMENTED', async () => {
    const error = await failureOf(call('/grpc.testing.UnimplementedService/UnimplementedCall', new Uint8Array(0)));
    expect(error.code).to.equal(Status.UNIMPLEMENTED);
  });
}

describe("gRPC interop cases against grpc-go's interop server, through createUnaryTransport", function () {
  this.timeout(30_000);
  describe('plaintext', () => unaryCases(false));
  describe('TLS (grpc-go test CA, server name foo.test.google.fr)', () => unaryCases(true));
});
