import { expect } from 'chai';
import { KeyedQueue } from '../../../src/store/keyed-queue';

/** An operation that runs until the test finishes it (or fails it), logging when it starts. */
function held(name: string, log: string[]): { operation: () => Promise<string>; finish: () => void; fail: () => void } {
  let finish: () => void = () => undefined;
  let fail: () => void = () => undefined;
  const done = new Promise<void>((resolve, reject) => {
    finish = resolve;
    fail = () => reject(new Error(`${name} failed`));
  });
  return {
    operation: async () => {
      log.push(`start ${name}`);
      await done;
      log.push(`end ${name}`);
      return name;
    },
    finish: () => finish(),
    fail: () => fail(),
  };
}

/** Lets every promise callback that is ready run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

// The queue that makes a pet's changes atomic on FerretDB v1 (docs/mongodb.md#changes).
describe('KeyedQueue', () => {
  it("runs one key's operations one at a time, in arrival order, and other keys' beside them", async () => {
    const queue = new KeyedQueue<bigint>();
    const log: string[] = [];
    const [a1, a2, a3, b1] = [held('a1', log), held('a2', log), held('a3', log), held('b1', log)];
    const results = [queue.run(1n, a1.operation), queue.run(1n, a2.operation), queue.run(1n, a3.operation), queue.run(2n, b1.operation)];
    await settle();
    expect(log, 'a1 and b1 at once, a2 waits').to.deep.equal(['start a1', 'start b1']);
    a1.finish();
    await settle();
    expect(log.slice(2)).to.deep.equal(['end a1', 'start a2']);
    b1.finish();
    a2.finish();
    await settle();
    a3.finish();
    expect(await Promise.all(results)).to.deep.equal(['a1', 'a2', 'a3', 'b1']);
    expect(log.indexOf('start a3'), 'a3 after a2 ended').to.be.greaterThan(log.indexOf('end a2'));
  });

  it('runs the next operation of a key after one that failed, and gives each caller its own outcome', async () => {
    const queue = new KeyedQueue<bigint>();
    const log: string[] = [];
    const [first, second] = [held('first', log), held('second', log)];
    const failed = queue.run(7n, first.operation).catch((error: Error) => error.message);
    const next = queue.run(7n, second.operation);
    await settle();
    first.fail();
    await settle();
    expect(log).to.deep.equal(['start first', 'start second']);
    second.finish();
    expect([await failed, await next]).to.deep.equal(['first failed', 'second']);
  });

  it('holds no key once its operations are done', async () => {
    const queue = new KeyedQueue<bigint>();
    const log: string[] = [];
    const operations = Array.from({ length: 3 }, (_, index) => held(`op${index}`, log));
    const results = operations.map(({ operation }, index) => queue.run(BigInt(index % 2), operation).catch(() => undefined));
    await settle();
    expect(queue.size).to.equal(2);
    operations[0]!.finish();
    operations[1]!.fail();
    await settle();
    operations[2]!.finish();
    await Promise.all(results);
    await settle();
    expect(queue.size).to.equal(0);
  });
});
