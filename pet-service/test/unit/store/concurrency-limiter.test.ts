import { EventEmitter } from 'node:events';
import { status as Status } from '@grpc/grpc-js';
import { expect } from 'chai';
import { PetServiceError } from '../../../src/pets/pet-service-error';
import { RETRY_PUSHBACK_METADATA } from '@petstore/proto';
import { createConcurrencyLimiter } from '../../../src/store/concurrency-limiter';

/** A write that runs until the test finishes it, and says whether it started. */
function heldWrite(name: string, log: string[]): { write: () => Promise<string>; finish: () => void } {
  let finish: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return {
    write: async () => {
      log.push(`start ${name}`);
      await done;
      return name;
    },
    finish: () => finish(),
  };
}

const outcomeOf = (promise: Promise<string>): Promise<string> =>
  promise.then(
    (value) => value,
    (error: unknown) => (error instanceof PetServiceError ? Status[error.code]! : String(error)),
  );

/** Runs one operation through `limiter` that takes `ms` on the clock `advance` moves. */
async function runTaking(limiter: ReturnType<typeof createConcurrencyLimiter>, advance: (ms: number) => void, ms: number): Promise<void> {
  const held = heldWrite('timed', []);
  const done = limiter.run(held.write);
  advance(ms);
  held.finish();
  await done;
}

class FakeCall extends EventEmitter {
  cancelled = false;
  constructor(private readonly deadline: number = Infinity) {
    super();
  }
  getDeadline(): number {
    return this.deadline;
  }
  cancel(): void {
    this.cancelled = true;
    this.emit('cancelled');
  }
}

describe('createConcurrencyLimiter', () => {
  it('runs up to maxConcurrent writes, queues up to maxQueued in order, and refuses the next at once with RESOURCE_EXHAUSTED', async () => {
    const limiter = createConcurrencyLimiter({ kind: 'write', maxConcurrent: 2, maxQueued: 2, operationTimeMs: 0 });
    const log: string[] = [];
    const writes = ['a', 'b', 'c', 'd'].map((name) => heldWrite(name, log));
    const outcomes = writes.map(({ write }) => outcomeOf(limiter.run(write)));
    expect(await outcomeOf(limiter.run(heldWrite('e', log).write))).to.equal('RESOURCE_EXHAUSTED');
    expect(log).to.deep.equal(['start a', 'start b']);
    expect({ running: limiter.running, queued: limiter.queued }, 'what the metrics read').to.deep.equal({ running: 2, queued: 2 });

    writes[1]!.finish();
    expect(await outcomes[1]).to.equal('b');
    expect(log).to.deep.equal(['start a', 'start b', 'start c']);
    writes[0]!.finish();
    expect(await outcomes[0]).to.equal('a');
    expect(log.at(-1)).to.equal('start d');
    writes[2]!.finish();
    writes[3]!.finish();
    expect(await Promise.all(outcomes)).to.deep.equal(['a', 'b', 'c', 'd']);
    expect({ running: limiter.running, queued: limiter.queued }).to.deep.equal({ running: 0, queued: 0 });

    // Every slot and place was given back.
    const again = ['f', 'g', 'h', 'i'].map((name) => heldWrite(name, log));
    const later = again.map(({ write }) => outcomeOf(limiter.run(write)));
    expect(await outcomeOf(limiter.run(heldWrite('j', log).write))).to.equal('RESOURCE_EXHAUSTED');
    for (const { finish } of again) finish();
    expect(await Promise.all(later)).to.deep.equal(['f', 'g', 'h', 'i']);
  });

  it('drops a queued write whose caller cancels: CANCELLED, never run, and its place freed', async () => {
    const limiter = createConcurrencyLimiter({ kind: 'write', maxConcurrent: 1, maxQueued: 1, operationTimeMs: 0 });
    const log: string[] = [];
    const running = heldWrite('a', log);
    const first = outcomeOf(limiter.run(running.write));
    const call = new FakeCall();
    const queued = outcomeOf(limiter.run(heldWrite('b', log).write, call));
    call.cancel();
    expect(await queued).to.equal('CANCELLED');
    expect(call.listenerCount('cancelled')).to.equal(0);

    const next = heldWrite('c', log);
    const third = outcomeOf(limiter.run(next.write));
    running.finish();
    next.finish();
    expect(await Promise.all([first, third])).to.deep.equal(['a', 'c']);
    expect(log).to.deep.equal(['start a', 'start c']);
    expect(await outcomeOf(limiter.run(async () => 'x', call))).to.equal('CANCELLED');
  });

  it('refuses a write with RESOURCE_EXHAUSTED while its caller can still be told: before the deadline leaves less than operationTimeMs', async () => {
    const limiter = createConcurrencyLimiter({ kind: 'write', maxConcurrent: 1, maxQueued: 5, operationTimeMs: 60_000 });
    const log: string[] = [];
    const running = heldWrite('a', log);
    const first = outcomeOf(limiter.run(running.write));
    // Its deadline leaves the store less than its timeout already: refused without queueing.
    const hurried = new FakeCall(Date.now() + 30_000);
    expect(await outcomeOf(limiter.run(heldWrite('b', log).write, hurried))).to.equal('RESOURCE_EXHAUSTED');
    // Waits until the deadline is operationTimeMs away, then gives up and leaves the queue.
    const patient = new FakeCall(Date.now() + 60_050);
    expect(await outcomeOf(limiter.run(heldWrite('c', log).write, patient))).to.equal('RESOURCE_EXHAUSTED');
    expect(patient.listenerCount('cancelled')).to.equal(0);
    // A caller without a deadline waits for its turn.
    const unhurried = heldWrite('d', log);
    const last = outcomeOf(limiter.run(unhurried.write, new FakeCall()));
    running.finish();
    unhurried.finish();
    expect(await Promise.all([first, last])).to.deep.equal(['a', 'd']);
    expect(log).to.deep.equal(['start a', 'start d']);
  });

  it('says what is full, and tells gRPC clients not to retry the refusal (retry pushback -1)', async () => {
    const limiter = createConcurrencyLimiter({ kind: 'read', maxConcurrent: 1, maxQueued: 0, operationTimeMs: 0 });
    const held = heldWrite('a', []);
    const first = limiter.run(held.write);
    const refusal = await limiter.run(async () => 'b').then(
      () => expect.fail('the second read ran'),
      (error: unknown) => error,
    );
    held.finish();
    await first;
    const sent = PetServiceError.toServiceError(refusal);
    expect({ code: sent.code, details: sent.details }).to.deep.equal({ code: Status.RESOURCE_EXHAUSTED, details: 'pet store is at its read capacity' });
    expect(sent.metadata!.get(RETRY_PUSHBACK_METADATA)).to.deep.equal(['-1']);
  });

  it('refuses at once a wait its deadline cannot afford four times over: the store\'s time per operation for each place ahead', async () => {
    let clock = 1_000_000;
    const limiter = createConcurrencyLimiter({ kind: 'read', maxConcurrent: 1, maxQueued: 10, operationTimeMs: 0, now: () => clock });
    const log: string[] = [];
    // Five operations of 10 s each, one at a time, bring the average to 6.7 s (a fifth of each new one counts).
    for (let count = 0; count < 5; count += 1) await runTaking(limiter, (by) => (clock += by), 10_000);
    const running = heldWrite('f', log);
    const first = outcomeOf(limiter.run(running.write));
    // First in the queue: about 6.7 s to wait, four times that 26.9 s; 28 s left, so it waits.
    const waits = heldWrite('g', log);
    const waited = outcomeOf(limiter.run(waits.write, new FakeCall(clock + 28_000)));
    // Second in the queue: about 13.4 s to wait, four times that 53.8 s, with 52 s left: refused now, not in 52 s.
    expect(await outcomeOf(limiter.run(heldWrite('h', log).write, new FakeCall(clock + 52_000)))).to.equal('RESOURCE_EXHAUSTED');
    expect(limiter.queued).to.equal(1);
    // With time enough for four times the wait, it queues.
    const later = heldWrite('i', log);
    const patient = outcomeOf(limiter.run(later.write, new FakeCall(clock + 100_000)));
    expect(limiter.queued).to.equal(2);
    for (const { finish } of [running, waits, later]) finish();
    expect(await Promise.all([first, waited, patient])).to.deep.equal(['f', 'g', 'i']);
  });

  it('starts no more at once than the store\'s time per operation fits in a quarter of the store timeout, so that a burst is held before the store, not timed out in it', async () => {
    let clock = 0;
    const limiter = createConcurrencyLimiter({ kind: 'read', maxConcurrent: 16, maxQueued: 100, operationTimeMs: 2000, now: () => clock });
    const log: string[] = [];
    expect(limiter.limit, 'nothing measured yet: the whole bound').to.equal(16);
    const advance = (ms: number) => (clock += ms);
    // A replica's first read is its slowest (new connections, cold code): one alone, of 1 s, leaves room for two.
    const fresh = createConcurrencyLimiter({ kind: 'read', maxConcurrent: 16, maxQueued: 100, operationTimeMs: 2000, now: () => clock });
    await runTaking(fresh, advance, 1000);
    expect(fresh.limit, 'one slow first read').to.equal(2);
    // Reads one at a time took 100 ms each: a store that serves one at a time would take 500 ms, a
    // quarter of the timeout, for five at once.
    for (let count = 0; count < 20; count += 1) await runTaking(limiter, advance, 100);
    expect(limiter.limit).to.equal(5);

    // A burst of twelve: five go to the store, seven wait (the old bound sent all twelve at once).
    const burst = Array.from({ length: 12 }, (_, index) => heldWrite(`b${index}`, log));
    const outcomes = burst.map(({ write }) => outcomeOf(limiter.run(write)));
    expect({ running: limiter.running, queued: limiter.queued }).to.deep.equal({ running: 5, queued: 7 });

    // The store serves them one at a time, 100 ms each: one ends every 100 ms, and the next in line
    // takes its place. Five run all along, and none is more than 500 ms in the store.
    for (let index = 0; index < 7; index += 1) {
      clock += 100;
      burst[index]!.finish();
      await outcomes[index];
      expect(limiter.running, `after ${index + 1} ended`).to.equal(5);
    }
    // A store that serves them side by side: the five running end together 10 ms later, and so
    // do four at a time after them; at 2.5 ms of the store's time each, the bound opens up to maxConcurrent.
    clock += 10;
    for (let index = 7; index < 12; index += 1) burst[index]!.finish();
    expect(await Promise.all(outcomes)).to.deep.equal(burst.map((_, index) => `b${index}`));
    for (let round = 0; round < 20; round += 1) {
      const together = Array.from({ length: 4 }, (_, index) => heldWrite(`p${index}`, log));
      const ran = together.map(({ write }) => limiter.run(write));
      clock += 10;
      for (const { finish } of together) finish();
      await Promise.all(ran);
    }
    expect(limiter.limit, 'never above maxConcurrent').to.equal(16);

    // However slow the store, one still runs (an operation past the store timeout counts as the timeout).
    await runTaking(limiter, advance, 60_000);
    expect(limiter.limit, 'never below one').to.equal(1);
    const memory = createConcurrencyLimiter({ kind: 'read', maxConcurrent: 4, maxQueued: 10, operationTimeMs: 0, now: () => clock });
    await runTaking(memory, advance, 60_000);
    expect(memory.limit, 'without a store timeout the bound stays').to.equal(4);
  });
});
