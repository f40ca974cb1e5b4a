import { Metadata, status as Status } from '@grpc/grpc-js';
import { etagMismatchMetadata, fieldViolationMetadata, STATUS_DETAILS_METADATA } from '@petstore/proto';
import { expect } from 'chai';
import { grpcStatusToHttp, PET_KEPT_CHANGING, PET_SERVICE_OVER_CAPACITY } from '../../../src/http/grpc-status-to-http';

describe('grpcStatusToHttp', () => {
  const table: Array<[Status, number, string]> = [
    [Status.INVALID_ARGUMENT, 400, 'invalid_request'],
    [Status.NOT_FOUND, 404, 'not_found'],
    [Status.ALREADY_EXISTS, 409, 'conflict'],
    [Status.RESOURCE_EXHAUSTED, 503, 'service_unavailable'],
    [Status.UNAVAILABLE, 503, 'service_unavailable'],
    [Status.DEADLINE_EXCEEDED, 504, 'gateway_timeout'],
    [Status.UNAUTHENTICATED, 401, 'unauthorized'],
    [Status.PERMISSION_DENIED, 403, 'forbidden'],
    [Status.INTERNAL, 500, 'internal'],
    [Status.UNKNOWN, 500, 'internal'],
    [Status.FAILED_PRECONDITION, 409, 'invalid_transition'],
    [Status.ABORTED, 503, 'service_unavailable'],
    [Status.DATA_LOSS, 500, 'internal'],
  ];
  for (const [code, status, errorCode] of table) {
    it(`maps ${Status[code]} to ${status} ${errorCode}`, () => {
      expect(grpcStatusToHttp(code, 'detail')).to.include({ status, code: errorCode });
    });
  }

  it('promises a retry after one second on every 503: a shed call (over capacity), a pet service or store unavailable, a pet that kept changing; on no other status', () => {
    expect(grpcStatusToHttp(Status.RESOURCE_EXHAUSTED, 'busy')).to.equal(PET_SERVICE_OVER_CAPACITY);
    expect(PET_SERVICE_OVER_CAPACITY.headers).to.deep.equal({ 'Retry-After': '1' });
    expect(grpcStatusToHttp(Status.UNAVAILABLE, 'pet store did not answer in time').headers).to.deep.equal({ 'Retry-After': '1' });
    expect(grpcStatusToHttp(Status.ABORTED, 'pet kept changing; try again').headers).to.deep.equal({ 'Retry-After': '1' });
    for (const code of [Status.DEADLINE_EXCEEDED, Status.INTERNAL, Status.NOT_FOUND]) expect(grpcStatusToHttp(code, 'x').headers, Status[code]).to.deep.equal({});
  });

  it('answers ABORTED with a google.rpc.ErrorInfo (an etag mismatch) 412 with the current ETag from it', () => {
    const error = grpcStatusToHttp(Status.ABORTED, 'not the message', etagMismatchMetadata(Status.ABORTED, 'etag: changed', '"7"'));
    expect(error).to.include({ status: 412, code: 'precondition_failed', message: 'If-Match: does not match the pet\'s current ETag, "7"' });
    expect(error.headers).to.deep.equal({ ETag: '"7"' });
  });

  it('answers ABORTED without a current etag (the pet kept changing; no condition failed) 503, never a 412 without its ETag', () => {
    expect(grpcStatusToHttp(Status.ABORTED, 'pet kept changing; try again')).to.equal(PET_KEPT_CHANGING);
    expect(grpcStatusToHttp(Status.ABORTED, 'x', new Metadata())).to.equal(PET_KEPT_CHANGING);
    expect(PET_KEPT_CHANGING).to.include({ status: 503, code: 'service_unavailable', message: 'the pet kept changing while this change was tried; retry later' });
  });

  it('passes the pet service\'s message of a refused transition, which names both statuses', () => {
    const message = 'status: cannot change from sold to available; sold is final';
    expect(grpcStatusToHttp(Status.FAILED_PRECONDITION, message)).to.include({ status: 409, code: 'invalid_transition', message });
  });

  const violation = (field: string, description: string) =>
    fieldViolationMetadata(Status.INVALID_ARGUMENT, `${field}: ${description}`, { field, description });

  // Every field the pet service names (pet-validation, page-token, idempotency, the handlers).
  const fields: Array<[string, string]> = [
    ['name', 'name'],
    ['category_id', 'categoryId'],
    ['status', 'status'],
    ['page_size', 'limit'],
    ['page_token', 'cursor'],
    ['id', 'petId'],
    ['pet.id', 'petId'],
    ['pet.name', 'name'],
    ['pet.category_id', 'categoryId'],
    ['pet.status', 'status'],
    ['update_mask', 'body'],
    ['etag', 'If-Match'],
    ['idempotency-key', 'Idempotency-Key'],
    ['x-caller-id', 'x-caller-id'],
    ['request', 'request'],
  ];
  for (const [field, httpField] of fields) {
    it(`names the pet service's ${field} as ${httpField}, from the field violation alone`, () => {
      // The status line says something else, so a message parser would be caught out.
      const error = grpcStatusToHttp(Status.INVALID_ARGUMENT, 'not the message', violation(field, 'is wrong'));
      expect(error).to.include({ status: 400, code: 'invalid_request', message: `${httpField}: is wrong` });
    });
  }

  it('names every field the pet service names, under their HTTP names, in its order, joined by "; "', () => {
    const violations = [
      { field: 'name', description: 'must be 1 to 100 characters' },
      { field: 'category_id', description: 'must be a positive int64' },
      { field: 'idempotency-key', description: 'must be one value' },
    ];
    const metadata = fieldViolationMetadata(Status.INVALID_ARGUMENT, 'not the message', violations);
    expect(grpcStatusToHttp(Status.INVALID_ARGUMENT, 'not the message', metadata)).to.include({
      status: 400,
      message: 'name: must be 1 to 100 characters; categoryId: must be a positive int64; Idempotency-Key: must be one value',
    });
  });

  it('names the field of a conflict too', () => {
    const metadata = fieldViolationMetadata(Status.ALREADY_EXISTS, 'x', { field: 'idempotency-key', description: 'already used' });
    expect(grpcStatusToHttp(Status.ALREADY_EXISTS, 'x', metadata)).to.include({ status: 409, message: 'Idempotency-Key: already used' });
  });

  it('shows a caller-facing message as it came when the error carries no field violation', () => {
    expect(grpcStatusToHttp(Status.NOT_FOUND, 'pet 42 not found', new Metadata()).message).to.equal('pet 42 not found');
    expect(grpcStatusToHttp(Status.INVALID_ARGUMENT, 'page_size: as text only').message).to.equal('page_size: as text only');
    expect(grpcStatusToHttp(Status.INVALID_ARGUMENT, '').message).to.equal('invalid request');
  });

  it('falls back to the status message when the details cannot be decoded', () => {
    const metadata = new Metadata();
    metadata.set(STATUS_DETAILS_METADATA, Buffer.from([0xff, 0xff, 0xff]));
    expect(grpcStatusToHttp(Status.INVALID_ARGUMENT, 'limit: bad', metadata).message).to.equal('limit: bad');
  });

  it('never shows a field violation for a code whose messages are not for clients', () => {
    const metadata = fieldViolationMetadata(Status.UNAVAILABLE, 'x', { field: 'id', description: 'secret' });
    expect(grpcStatusToHttp(Status.UNAVAILABLE, 'x', metadata).message).to.equal('pet service unavailable');
  });

  it('never shows internal details of server-side failures', () => {
    expect(grpcStatusToHttp(Status.INTERNAL, 'TypeError at /srv/x.ts:1').message).to.equal('internal error');
    expect(grpcStatusToHttp(Status.UNAVAILABLE, 'connect ECONNREFUSED 10.0.0.1').message).to.equal('pet service unavailable');
  });
});
