import type { ServiceError } from '@grpc/grpc-js';
import { expect } from 'chai';

/** What a failed call rejected with (fails the test if it succeeded). */
export async function failureOf(call: Promise<unknown>): Promise<ServiceError> {
  try {
    await call;
  } catch (error) {
    expect(error).to.be.an.instanceOf(Error);
    return error as ServiceError;
  }
  return expect.fail('the call succeeded');
}
