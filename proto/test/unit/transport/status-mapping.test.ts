import { constants } from 'node:http2';
import { status as Status } from '@grpc/grpc-js';
import { expect } from 'chai';
import fc from 'fast-check';
import { codeOfHttpStatus, codeOfResetStream, decodeGrpcMessage, encodeGrpcMessage, grpcTimeout, http2CodeName } from '../../../transport/status-mapping';

/** Any text: code points from each range, controls and non-BMP characters included (no lone surrogate, which UTF-8 cannot carry). */
const TEXT = fc
  .array(fc.oneof(fc.integer({ min: 0, max: 0x7f }), fc.integer({ min: 0x80, max: 0xd7ff }), fc.integer({ min: 0xe000, max: 0x10ffff })))
  .map((points) => String.fromCodePoint(...points));

describe('status mapping: grpc/grpc PROTOCOL-HTTP2.md and http-grpc-status-mapping.md', () => {
  it('maps an HTTP status without grpc-status as the table says, anything else UNKNOWN', () => {
    const table: Record<number, Status> = {
      400: Status.INTERNAL,
      401: Status.UNAUTHENTICATED,
      403: Status.PERMISSION_DENIED,
      404: Status.UNIMPLEMENTED,
      429: Status.UNAVAILABLE,
      431: Status.INTERNAL,
      502: Status.UNAVAILABLE,
      503: Status.UNAVAILABLE,
      504: Status.UNAVAILABLE,
    };
    for (const [http, code] of Object.entries(table)) expect(Status[codeOfHttpStatus(Number(http))], http).to.equal(Status[code]);
    for (const other of [200, 201, 204, 301, 402, 415, 430, 432, 500, 505]) expect(Status[codeOfHttpStatus(other)], String(other)).to.equal('UNKNOWN');
  });

  it('maps a reset stream’s HTTP/2 error code as the protocol’s "Errors" section does', () => {
    expect(Status[codeOfResetStream(constants.NGHTTP2_REFUSED_STREAM)]).to.equal('UNAVAILABLE');
    expect(Status[codeOfResetStream(constants.NGHTTP2_CANCEL)]).to.equal('CANCELLED');
    expect(Status[codeOfResetStream(constants.NGHTTP2_ENHANCE_YOUR_CALM)]).to.equal('RESOURCE_EXHAUSTED');
    expect(Status[codeOfResetStream(constants.NGHTTP2_INADEQUATE_SECURITY)]).to.equal('PERMISSION_DENIED');
    for (const code of [constants.NGHTTP2_NO_ERROR, constants.NGHTTP2_PROTOCOL_ERROR, constants.NGHTTP2_INTERNAL_ERROR, constants.NGHTTP2_FLOW_CONTROL_ERROR, constants.NGHTTP2_SETTINGS_TIMEOUT, constants.NGHTTP2_FRAME_SIZE_ERROR, constants.NGHTTP2_COMPRESSION_ERROR, constants.NGHTTP2_CONNECT_ERROR]) {
      expect(Status[codeOfResetStream(code)], http2CodeName(code)).to.equal('INTERNAL');
    }
    expect(http2CodeName(7)).to.equal('REFUSED_STREAM');
    expect(http2CodeName(99)).to.equal('99');
  });

  it('percent-decodes grpc-message; any text, Unicode and control characters included, round-trips', () => {
    const special = '\t\ntest with whitespace\r\nand Unicode BMP ☺ and non-BMP 😈\t\n';
    expect(encodeGrpcMessage(special)).to.equal('%09%0Atest with whitespace%0D%0Aand Unicode BMP %E2%98%BA and non-BMP %F0%9F%98%88%09%0A');
    expect(decodeGrpcMessage(encodeGrpcMessage(special))).to.equal(special);
    expect(decodeGrpcMessage('100%25 sure')).to.equal('100% sure');
    fc.assert(fc.property(TEXT, (text) => decodeGrpcMessage(encodeGrpcMessage(text)) === text));
  });

  it('keeps a grpc-message that is no valid percent-encoded UTF-8 as received, never throws', () => {
    for (const raw of ['50%', '%zz', '%E2%98', '%FF', 'a%', 'plain']) expect(decodeGrpcMessage(raw), raw).to.equal(raw);
    fc.assert(fc.property(fc.string(), (raw) => typeof decodeGrpcMessage(raw) === 'string'));
  });

  it('writes grpc-timeout in at most 8 digits, rounded up, never 0', () => {
    expect(grpcTimeout(2000)).to.equal('2000m');
    expect(grpcTimeout(0.2)).to.equal('1m');
    expect(grpcTimeout(-5)).to.equal('1m');
    expect(grpcTimeout(99_999_999)).to.equal('99999999m');
    expect(grpcTimeout(100_000_000)).to.equal('100000S');
    expect(grpcTimeout(200_000_000_000)).to.equal('3333334M');
    expect(grpcTimeout(Number.MAX_SAFE_INTEGER)).to.match(/^\d{1,8}H$/);
  });
});
