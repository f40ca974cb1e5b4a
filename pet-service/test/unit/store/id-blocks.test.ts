import { expect } from 'chai';
import { createIdAllocator, type IdBlock } from '../../../src/store/id-blocks';

/** A reservation source that hands out consecutive blocks of `size` and records each call. */
function blocksOf(size: number) {
  const calls: Array<bigint | undefined> = [];
  let top = 0n;
  let fail: Error | undefined;
  const pending: Array<() => void> = [];
  let hold = false;
  const reserve = async (above?: bigint): Promise<IdBlock> => {
    calls.push(above);
    if (hold) await new Promise<void>((resolve) => pending.push(resolve));
    if (fail !== undefined) throw fail;
    if (above !== undefined && above > top) top = above;
    const block = { first: top + 1n, last: top + BigInt(size) };
    top = block.last;
    return block;
  };
  return {
    reserve,
    calls,
    failWith: (error: Error | undefined) => (fail = error),
    hold: () => (hold = true),
    release: () => {
      hold = false;
      for (const resolve of pending.splice(0)) resolve();
    },
  };
}

describe('createIdAllocator', () => {
  it('hands out the ids of a block in order, and reserves the next block only when it is used up', async () => {
    const source = blocksOf(3);
    const ids = createIdAllocator(source.reserve);
    const got = [];
    for (let index = 0; index < 7; index += 1) got.push(await ids.next());
    expect(got).to.deep.equal([1n, 2n, 3n, 4n, 5n, 6n, 7n]);
    expect(source.calls).to.have.length(3);
    expect(ids.blocks).to.equal(3);
  });

  it('makes concurrent callers that find the block used up wait for one reservation', async () => {
    const source = blocksOf(10);
    const ids = createIdAllocator(source.reserve);
    source.hold();
    const waiting = Array.from({ length: 25 }, () => ids.next());
    expect(source.calls).to.have.length(1);
    source.release();
    const got = await Promise.all(waiting);
    expect(new Set(got).size).to.equal(25);
    expect(got.toSorted((a, b) => (a < b ? -1 : 1))).to.deep.equal(Array.from({ length: 25 }, (_, index) => BigInt(index + 1)));
    expect(source.calls).to.have.length(3);
  });

  it('fails the callers of a failed reservation, and tries again on the next call', async () => {
    const source = blocksOf(2);
    const ids = createIdAllocator(source.reserve);
    source.failWith(new Error('no primary'));
    const failed = await Promise.allSettled([ids.next(), ids.next()]);
    expect(failed.map((result) => result.status)).to.deep.equal(['rejected', 'rejected']);
    source.failWith(undefined);
    expect(await ids.next()).to.equal(1n);
    expect(source.calls).to.have.length(2);
  });

  it('leaves a block whose id was found in use, for one above that id; an older id changes nothing', async () => {
    const source = blocksOf(100);
    const ids = createIdAllocator(source.reserve);
    expect(await ids.next()).to.equal(1n);
    ids.skipPast(1n);
    expect(await ids.next()).to.equal(101n);
    expect(source.calls).to.deep.equal([undefined, 1n]);
    ids.skipPast(500n);
    expect(await ids.next()).to.equal(501n);
    ids.skipPast(7n);
    expect(await ids.next()).to.equal(502n);
    expect(source.calls).to.deep.equal([undefined, 1n, 500n]);
  });

  it('drops a block reserved while a skip asked for one higher', async () => {
    const source = blocksOf(10);
    const ids = createIdAllocator(source.reserve);
    source.hold();
    const first = ids.next();
    ids.skipPast(50n);
    source.release();
    expect(await first).to.equal(51n);
    expect(source.calls).to.deep.equal([undefined, 50n]);
  });
});
