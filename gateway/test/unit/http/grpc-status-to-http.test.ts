import { status as Status } from '@grpc/grpc-js';
import { expect } from 'chai';
import { grpcStatusToHttp } from '../../../src/http/grpc-status-to-http';

describe('grpcStatusToHttp', () => {
  const table: Array<[Status, number, string]> = [
    [Status.INVALID_ARGUMENT, 400, 'invalid_request'],
    [Status.NOT_FOUND, 404, 'not_found'],
    [Status.ALREADY_EXISTS, 409, 'conflict'],
    [Status.RESOURCE_EXHAUSTED, 429, 'rate_limited'],
    [Status.UNAVAILABLE, 503, 'service_unavailable'],
    [Status.DEADLINE_EXCEEDED, 504, 'gateway_timeout'],
    [Status.UNAUTHENTICATED, 401, 'unauthorized'],
    [Status.PERMISSION_DENIED, 403, 'forbidden'],
    [Status.INTERNAL, 500, 'internal'],
    [Status.UNKNOWN, 500, 'internal'],
    [Status.FAILED_PRECONDITION, 500, 'internal'],
    [Status.DATA_LOSS, 500, 'internal'],
  ];
  for (const [code, status, errorCode] of table) {
    it(`maps ${Status[code]} to ${status} ${errorCode}`, () => {
      expect(grpcStatusToHttp(code, 'detail')).to.include({ status, code: errorCode });
    });
  }

  it('promises a retry after one second when the pet service is over capacity, and nothing else', () => {
    expect(grpcStatusToHttp(Status.RESOURCE_EXHAUSTED, 'busy').headers).to.deep.equal({ 'Retry-After': '1' });
    expect(grpcStatusToHttp(Status.UNAVAILABLE, 'down').headers).to.deep.equal({});
  });

  it('passes validation messages through with HTTP field names', () => {
    expect(grpcStatusToHttp(Status.INVALID_ARGUMENT, 'page_token: is malformed').message).to.equal('cursor: is malformed');
    expect(grpcStatusToHttp(Status.INVALID_ARGUMENT, 'category_id: must be').message).to.equal('categoryId: must be');
    expect(grpcStatusToHttp(Status.INVALID_ARGUMENT, 'name: too long').message).to.equal('name: too long');
  });

  it('never shows internal details of server-side failures', () => {
    expect(grpcStatusToHttp(Status.INTERNAL, 'TypeError at /srv/x.ts:1').message).to.equal('internal error');
    expect(grpcStatusToHttp(Status.UNAVAILABLE, 'connect ECONNREFUSED 10.0.0.1').message).to.equal('pet service unavailable');
  });
});
