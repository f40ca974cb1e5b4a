import { expect } from 'chai';
import { withinDeadline } from '../../src/deadline';

describe('withinDeadline', () => {
  const expired = () => new Error('too late');

  it("gives the work's value or failure when it settles in time", async () => {
    expect(await withinDeadline(Promise.resolve(7), 1000, expired)).to.equal(7);
    const failure = await withinDeadline(Promise.reject(new Error('refused')), 1000, expired).catch((error: Error) => error.message);
    expect(failure).to.equal('refused');
  });

  it('rejects with the given error once the deadline has passed, and ignores a late failure of the work', async () => {
    let fail: (error: Error) => void = () => undefined;
    const work = new Promise<number>((_resolve, reject) => (fail = reject));
    const outcome = await withinDeadline(work, 5, expired).catch((error: Error) => error.message);
    expect(outcome).to.equal('too late');
    const unhandled: unknown[] = [];
    const record = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', record);
    try {
      fail(new Error('late'));
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).to.deep.equal([]);
    } finally {
      process.off('unhandledRejection', record);
    }
  });
});
