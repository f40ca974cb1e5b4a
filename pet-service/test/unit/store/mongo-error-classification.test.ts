import { status as Status } from '@grpc/grpc-js';
import { expect } from 'chai';
import {
  MongoClientClosedError,
  MongoNetworkError,
  MongoNetworkTimeoutError,
  MongoServerError,
  MongoServerSelectionError,
  type TopologyDescription,
} from 'mongodb';
import { PetServiceError } from '../../../src/pets/pet-service-error';
import { isConnectionFailure, isCredentialRefusal, isFailover, toStoreError } from '../../../src/store/mongo-error-classification';

const codeOf = (error: unknown): string => (error instanceof PetServiceError ? Status[error.code]! : 'not translated');

describe('mongo error classification', () => {
  // Issue 13, point 4: ~10 concurrent creates on FerretDB outlived the socket timeout, and every
  // operation, reads included, then failed at once as if the server were gone.
  it('treats an operation that ran out of time as slow (DEADLINE_EXCEEDED), never as the server gone', () => {
    const timeouts = [
      new MongoNetworkTimeoutError('connection 7 to 127.0.0.1:27017 timed out'),
      new MongoServerError({ code: 50, errmsg: 'operation exceeded time limit' }),
      new MongoServerError({ code: 1, errmsg: '[collection.go:177 sqlite.(*collection).UpdateAll.func1] context deadline exceeded' }),
      new MongoServerError({ code: 1, errmsg: '[db.go:167 fsql.(*DB).InTransaction] sql: transaction has already been committed or rolled back' }),
    ];
    for (const error of timeouts) {
      expect(isConnectionFailure(error), error.message).to.equal(false);
      expect(codeOf(toStoreError(error)), error.message).to.equal('DEADLINE_EXCEEDED');
    }
  });

  it('treats a server out of reach as UNAVAILABLE, and as a reason to fail fast', () => {
    const unreachable = [
      new MongoNetworkError('connect ECONNREFUSED 127.0.0.1:27017'),
      new MongoServerSelectionError('Server selection timed out after 1000 ms', {} as TopologyDescription),
    ];
    for (const error of unreachable) {
      expect(isConnectionFailure(error), error.message).to.equal(true);
      expect(codeOf(toStoreError(error)), error.message).to.equal('UNAVAILABLE');
    }
    const steppingDown = new MongoServerError({ code: 11600, errmsg: 'interrupted at shutdown' });
    expect(isConnectionFailure(steppingDown)).to.equal(false);
    expect(codeOf(toStoreError(steppingDown))).to.equal('UNAVAILABLE');
  });

  it('leaves anything else untranslated, so that it is reported as a bug', () => {
    const closed = new MongoClientClosedError();
    expect(isConnectionFailure(closed)).to.equal(false);
    expect(toStoreError(closed)).to.equal(closed);
  });

  it('retries a create after a failover or a lost connection, never after a timeout or a refusal', () => {
    const labelled = new MongoServerError({ code: 1, errmsg: 'anything the server says may be retried' });
    labelled.addErrorLabel('RetryableWriteError');
    const failovers = [
      labelled,
      new MongoServerError({ code: 10107, errmsg: 'not primary' }),
      new MongoServerError({ code: 11602, errmsg: 'operation was interrupted' }),
      new MongoServerError({ code: 189, errmsg: 'primary stepped down' }),
      new MongoNetworkError('connection 3 to 127.0.0.1:27017 closed'),
      new MongoServerSelectionError('Server selection timed out after 1000 ms', {} as TopologyDescription),
    ];
    for (const error of failovers) expect(isFailover(error), error.message).to.equal(true);
    const others = [
      new MongoNetworkTimeoutError('connection 7 to 127.0.0.1:27017 timed out'),
      new MongoServerError({ code: 50, errmsg: 'operation exceeded time limit' }),
      new MongoServerError({ code: 11000, errmsg: 'E11000 duplicate key error' }),
      new MongoClientClosedError(),
      new PetServiceError(Status.ALREADY_EXISTS, 'idempotency key reused'),
    ];
    for (const error of others) expect(isFailover(error), error.message).to.equal(false);
  });

  it('tells refused credentials (MongoDB’s codes 13 and 18, FerretDB’s wording, or either as a cause) from an outage', () => {
    const refusals = [
      new MongoServerError({ code: 18, errmsg: 'Authentication failed.' }),
      new MongoServerError({ code: 13, errmsg: 'command find requires authentication' }),
      new Error('wrapped', { cause: new MongoServerError({ code: 18, errmsg: 'Authentication failed.' }) }),
      new Error('Command insert requires authentication'),
    ];
    for (const error of refusals) expect(isCredentialRefusal(error), error.message).to.equal(true);
    const others = [new MongoNetworkError('connect ECONNREFUSED 127.0.0.1:27017'), new MongoServerError({ code: 11000, errmsg: 'E11000 duplicate key' })];
    for (const error of others) expect(isCredentialRefusal(error), error.message).to.equal(false);
  });
});
