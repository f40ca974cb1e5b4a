import { Metadata, status as Status } from '@grpc/grpc-js';
import { expect } from 'chai';
import { currentEtagOf, etagMismatchMetadata, refusedTransitionOf, transitionFailureMetadata } from '../../error-details';
import { fieldViolationMetadata } from '../../field-violation';
import { PreconditionFailure } from '../../gen/google/rpc/error_details';
import { Status as RpcStatus } from '../../gen/google/rpc/status';
import { STATUS_DETAILS_METADATA } from '../../metadata';

/** Details of one PreconditionFailure violation, as another server might send them. */
function preconditionFailure(type: string, subject: string): Metadata {
  const value = PreconditionFailure.encode({ violations: [{ type, subject, description: 'x' }] }).finish();
  const metadata = new Metadata();
  const status = RpcStatus.encode({ code: Status.FAILED_PRECONDITION, message: 'x', details: [{ typeUrl: 'type.googleapis.com/google.rpc.PreconditionFailure', value: Buffer.from(value) }] });
  metadata.set(STATUS_DETAILS_METADATA, Buffer.from(status.finish()));
  return metadata;
}

describe('the details of a refused change: what an internal caller decodes', () => {
  it('refusedTransitionOf reads the change of status a FAILED_PRECONDITION refused, from its PreconditionFailure', () => {
    const metadata = transitionFailureMetadata(Status.FAILED_PRECONDITION, 'status: cannot change from sold to available; sold is final', { from: 'sold', to: 'available' });
    expect(refusedTransitionOf(metadata)).to.deep.equal({ from: 'sold', to: 'available' });
    expect(currentEtagOf(metadata), 'no ErrorInfo in it').to.equal(undefined);
  });

  it('currentEtagOf reads the current etag an ABORTED carries in its ErrorInfo (reason ETAG_MISMATCH)', () => {
    const metadata = etagMismatchMetadata(Status.ABORTED, 'etag: the pet has changed; its etag is now "4"', '"4"');
    expect(currentEtagOf(metadata)).to.equal('"4"');
    expect(refusedTransitionOf(metadata), 'no PreconditionFailure in it').to.equal(undefined);
  });

  it('refusedTransitionOf is undefined without details, for other details, undecodable bytes, another violation type or statuses it does not know', () => {
    const undecodable = new Metadata();
    undecodable.set(STATUS_DETAILS_METADATA, Buffer.from([0xff, 0xff, 0xff]));
    for (const [label, metadata] of [
      ['none', undefined],
      ['empty', new Metadata()],
      ['a BadRequest', fieldViolationMetadata(Status.INVALID_ARGUMENT, 'name: x', { field: 'name', description: 'x' })],
      ['undecodable', undecodable],
      ['another type', preconditionFailure('TOS', 'sold -> available')],
      ['an unknown status', preconditionFailure('STATUS_TRANSITION', 'sold -> lost')],
      ['no arrow', preconditionFailure('STATUS_TRANSITION', 'sold')],
    ] as const) {
      expect(refusedTransitionOf(metadata), label).to.equal(undefined);
    }
  });
});
