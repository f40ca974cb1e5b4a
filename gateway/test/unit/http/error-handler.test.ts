import { Metadata, status as Status } from '@grpc/grpc-js';
import { fieldViolationMetadata } from '@petstore/proto';
import { expect } from 'chai';
import { toApiError } from '../../../src/http/error-handler';

/** The error express's router throws for a path parameter it cannot percent-decode. */
function undecodableParameter(): URIError {
  return Object.assign(new URIError("Failed to decode param '%E0'"), { status: 400, statusCode: 400 });
}

/** An error as the grpc-js client rejects a call with. */
function grpcError(code: Status, details: string, metadata: Metadata): Error {
  return Object.assign(new Error(`${code} ${Status[code]}: ${details}`), { code, details, metadata });
}

describe('toApiError', () => {
  it('names the path when a route leaves an undecodable parameter to it', () => {
    expect(toApiError(undecodableParameter())).to.include({ status: 400, message: 'path: malformed percent-encoding' });
  });

  it("keeps a URIError of the gateway's own a 500", () => {
    expect(toApiError(new URIError('URI malformed'))).to.include({ status: 500, code: 'internal' });
  });

  it('translates a gRPC error with the field violation in its trailers', () => {
    const violation = { field: 'page_token', description: 'is malformed' };
    const metadata = fieldViolationMetadata(Status.INVALID_ARGUMENT, 'bad page token', violation);
    expect(toApiError(grpcError(Status.INVALID_ARGUMENT, 'bad page token', metadata))).to.include({
      status: 400,
      code: 'invalid_request',
      message: 'cursor: is malformed',
    });
  });
});
