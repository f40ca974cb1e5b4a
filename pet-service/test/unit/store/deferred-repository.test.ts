import { status as Status } from '@grpc/grpc-js';
import { expect } from 'chai';
import { PetServiceError } from '../../../src/pets/pet-service-error';
import { DeferredRepository } from '../../../src/store/deferred-repository';
import { MemoryPetRepository } from '../../../src/store/memory-pet-repository';
import type { PetRepository } from '../../../src/store/pet-repository';

const DOWN = (): PetServiceError => new PetServiceError(Status.UNAVAILABLE, 'pet store unavailable: MongoDB at db:27017: connect ECONNREFUSED');

/** A store that opens on the `failures + 1`th attempt, and says whether it was closed. */
function opener(failures: number): { open: () => Promise<PetRepository>; attempts: () => number; closed: () => boolean } {
  let attempts = 0;
  let closed = false;
  return {
    open: async () => {
      attempts += 1;
      if (attempts <= failures) throw DOWN();
      const store = new MemoryPetRepository();
      store.close = async () => {
        closed = true;
      };
      return store;
    },
    attempts: () => attempts,
    closed: () => closed,
  };
}

describe('DeferredRepository', () => {
  it('fails every operation UNAVAILABLE until the store opens, then serves from it', async () => {
    let release: (() => void) | undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const repository = new DeferredRepository({ open: async () => (await gate, new MemoryPetRepository()) });
    for (const operation of [() => repository.ping(), () => repository.list({ limit: 1 }), () => repository.get(1n), () => repository.create({ name: 'Rex', categoryId: 1n, status: 'available' })]) {
      const error = await operation().then(() => undefined, (caught: unknown) => caught);
      expect(error).to.be.instanceOf(PetServiceError).and.to.include({ code: Status.UNAVAILABLE, message: 'pet store unavailable' });
    }
    release!();
    await repository.opened;
    await repository.ping();
    const { pet } = await repository.create({ name: 'Rex', categoryId: 1n, status: 'available' });
    expect(await repository.get(pet.id)).to.deep.equal(pet);
  });

  it("hands a read's abort signal to the store it opened, so a caller that leaves stops the read there", async () => {
    const seen: Array<AbortSignal | undefined> = [];
    const store = new MemoryPetRepository();
    const list = store.list.bind(store);
    const get = store.get.bind(store);
    store.list = (query, signal) => (seen.push(signal), list(query, signal));
    store.get = (id, signal) => (seen.push(signal), get(id, signal));
    const repository = new DeferredRepository({ open: async () => store });
    await repository.opened;
    const controller = new AbortController();
    await repository.list({ limit: 1 }, controller.signal);
    await repository.get(1n, controller.signal);
    expect(seen).to.deep.equal([controller.signal, controller.signal]);
  });

  it('tries again after each store error, pausing twice as long each time (jittered in the upper half), up to the ceiling', async () => {
    const store = opener(5);
    const retries: Array<[number, number]> = [];
    const random = [0, 0.999, 0.5, 0, 0];
    const repository = new DeferredRepository({
      open: store.open,
      firstDelayMs: 4,
      maxDelayMs: 16,
      random: () => random.shift()!,
      onRetry: (error, attempts, delayMs) => {
        expect(error.message).to.match(/^pet store unavailable: MongoDB at db:27017/);
        retries.push([attempts, delayMs]);
      },
    });
    await repository.opened;
    expect(store.attempts()).to.equal(6);
    expect(retries).to.deep.equal([
      [1, 2],
      [2, 8],
      [3, 12],
      [4, 8],
      [5, 8],
    ]);
  });

  it('settles firstAttempt after the first attempt: opened, to be tried again, or refused for good', async () => {
    const opened = new DeferredRepository({ open: opener(0).open });
    await opened.firstAttempt;
    expect(opened.isOpen).to.equal(true);

    const retried = opener(Number.POSITIVE_INFINITY);
    const waiting = new DeferredRepository({ open: retried.open, firstDelayMs: 60_000 });
    await waiting.firstAttempt;
    expect(waiting.isOpen).to.equal(false);
    expect(retried.attempts()).to.equal(1);
    await waiting.close();

    const refused = new Error('Authentication failed.');
    const final = new DeferredRepository({ open: () => Promise.reject(refused) });
    expect(await final.firstAttempt.then(() => undefined, (caught: unknown) => caught)).to.equal(refused);
  });

  it('stops at an error that no wait fixes: `opened` rejects with it, and nothing is tried again', async () => {
    let attempts = 0;
    const refused = new Error('Authentication failed.');
    const repository = new DeferredRepository({
      open: async () => {
        attempts += 1;
        if (attempts === 1) throw DOWN();
        throw refused;
      },
      firstDelayMs: 1,
    });
    const error = await repository.opened.then(() => undefined, (caught: unknown) => caught);
    expect(error).to.equal(refused);
    expect(attempts).to.equal(2);
    await repository.close();
    expect(attempts).to.equal(2);
  });

  it('close() while waiting between attempts stops trying; `opened` never settles', async () => {
    const store = opener(Number.POSITIVE_INFINITY);
    let retried: (() => void) | undefined;
    const firstRetry = new Promise<void>((resolve) => (retried = resolve));
    const repository = new DeferredRepository({ open: store.open, firstDelayMs: 60_000, onRetry: () => retried!() });
    let settled = false;
    repository.opened.then(
      () => (settled = true),
      () => (settled = true),
    );
    await firstRetry;
    await repository.close();
    expect(store.attempts()).to.equal(1);
    expect(settled).to.equal(false);
  });

  it('close() during an attempt that then succeeds closes the store it opened', async () => {
    let release: (() => void) | undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const store = opener(0);
    const repository = new DeferredRepository({ open: async () => (await gate, store.open()) });
    const closing = repository.close();
    release!();
    await closing;
    expect(store.closed()).to.equal(true);
    const error = await repository.ping().then(() => undefined, (caught: unknown) => caught);
    expect(error).to.be.instanceOf(PetServiceError).and.to.include({ code: Status.UNAVAILABLE });
  });

  it('close() once open closes the store', async () => {
    const store = opener(0);
    const repository = new DeferredRepository({ open: store.open });
    await repository.opened;
    await repository.close();
    expect(store.closed()).to.equal(true);
  });
});
