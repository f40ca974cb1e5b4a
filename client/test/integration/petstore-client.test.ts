import { expect } from 'chai';
import { createPetstoreClient, PetstoreError, type PetstoreClientOptions } from '../../src';
import type { Int64Mode } from '../../src/types';
import { secretOf, startRateLimitStack, type RateLimitStack } from '../../../system-test/support/rate-limit-stack';
import { startCuttingProxy, type CuttingProxy } from '../support/cutting-proxy';
import { fakeTime, seededRandom } from '../support/fake-time';

const MINUTE_START = Date.UTC(2030, 0, 1, 12, 0, 0);
const KEYS = [
  { id: 'bulk', plan: 'enterprise', limits: { perMinute: 1e9, perDay: 1e9 } },
  { id: 'free-retrying', plan: 'free' },
  { id: 'free-paced', plan: 'free' },
  { id: 'banme', plan: 'enterprise', limits: { perMinute: 1, perDay: 1000 } },
] as const;

/** Runs `count` calls of `task`, `concurrency` at a time. */
async function inParallel(count: number, concurrency: number, task: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

describe('petstore client against a real gateway and pet service', function () {
  this.timeout(60_000);
  let stack: RateLimitStack;
  /** Statuses the gateway answered, per key, as the client saw them. */
  let seen: Map<string, number[]>;

  function clientFor<Mode extends Int64Mode = 'bigint'>(keyId: string, options: Partial<PetstoreClientOptions<Mode>> = {}) {
    const time = fakeTime(stack.now, stack.setNow);
    const statuses: number[] = [];
    seen.set(keyId, statuses);
    return createPetstoreClient<Mode>({
      baseUrl: stack.baseUrl,
      apiKey: secretOf(keyId),
      now: time.now,
      sleep: time.sleep,
      random: seededRandom(18),
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        statuses.push(response.status);
        return response;
      },
      ...options,
    });
  }

  beforeEach(async () => {
    stack = await startRateLimitStack({ keys: KEYS, startAt: MINUTE_START + 18_000 });
    seen = new Map();
  });

  afterEach(async () => {
    await stack.close();
  });

  it('pages a 250-record store into 250 distinct pets, keeping the limit and the filter', async () => {
    const client = clientFor('bulk');
    for (let index = 0; index < 250; index += 1) {
      await client.createPet({ name: `pet-${index}`, categoryId: 1, status: index % 5 === 0 ? 'sold' : 'available' });
    }
    const ids = new Set<bigint>();
    for await (const pet of client.listPets({ limit: 7 })) ids.add(pet.id);
    expect(ids.size).to.equal(250);
    // 250 / 7 pages, each one request: the limit was kept on every page.
    expect(seen.get('bulk')!.length).to.equal(250 + 36);

    const sold: string[] = [];
    for await (const pet of client.listPets({ limit: 9, status: 'sold' })) sold.push(pet.status);
    expect(sold).to.have.length(50);
    expect(new Set(sold)).to.deep.equal(new Set(['sold']));
  });

  it('changes a pet with its ETag, reports a stale one and a refused transition by code, and deletes it', async () => {
    const client = clientFor('bulk');
    const pet = await client.createPet({ name: 'Rex', categoryId: 1 });
    const reserved = await client.updatePet(pet.id, { status: 'pending' });
    expect(reserved.pet).to.deep.equal({ ...pet, status: 'pending' });
    const stale = await client.updatePet(pet.id, { status: 'sold' }, { ifMatch: '"0"' }).catch((error: unknown) => error);
    expect(stale).to.be.instanceOf(PetstoreError);
    expect(stale).to.include({ code: 'precondition_failed', status: 412, currentEtag: reserved.etag });
    const sold = await client.updatePet(pet.id, { status: 'sold' }, { ifMatch: reserved.etag });
    expect(sold.pet.status).to.equal('sold');
    expect(sold.etag).to.not.equal(reserved.etag);
    const refused = await client.updatePet(pet.id, { status: 'available' }).catch((error: unknown) => error);
    expect(refused).to.include({ code: 'invalid_transition', status: 409, message: 'status: cannot change from sold to available; sold is final' });
    await client.deletePet(pet.id, { ifMatch: sold.etag });
    expect(await client.deletePet(pet.id).catch((error: unknown) => error)).to.include({ code: 'not_found' });
  });

  it('round-trips int64 beyond 2^53 exactly, as bigint or as string', async () => {
    const created = await clientFor('bulk').createPet({ name: 'Big', categoryId: 9223372036854775807n });
    expect(created.categoryId).to.equal(9223372036854775807n);
    const asStrings = clientFor<'string'>('bulk', { int64: 'string' });
    const listed = [];
    for await (const pet of asStrings.listPets()) listed.push(pet);
    expect(listed).to.deep.equal([{ id: String(created.id), name: 'Big', categoryId: '9223372036854775807', status: 'available' }]);
  });

  it('drives a free key past its limit by its retries and never gets it banned', async () => {
    // The fake clock adds concurrent waits up (see fakeTime), so a call seems to take several
    // windows: a budget and a timeout that cover them, as real overlapping waits would not need.
    const client = clientFor('free-retrying', { retry: { budgetMs: 3_600_000 }, timeoutMs: 3_600_000 });
    // Five callers at once (at most BAN_THRESHOLD can be refused together), 200 calls: more than
    // three minute windows of the free plan's 60.
    await inParallel(200, 5, async () => {
      const page = client.listPets({ limit: 1 });
      await page.next();
      await page.return?.(undefined);
    });
    const statuses = seen.get('free-retrying')!;
    expect(statuses.filter((status) => status === 200)).to.have.length(200);
    expect(statuses.filter((status) => status === 429).length, 'the limit was reached').to.be.greaterThan(0);
    expect((await stack.request('/v1/pets', 'free-retrying')).status, 'not banned').to.equal(200);
  });

  it('paced, never triggers a 429', async () => {
    const client = clientFor('free-paced', { pace: true });
    await inParallel(200, 5, async (index) => {
      await client.createPet({ name: `paced-${index}`, categoryId: 1 });
    });
    const statuses = seen.get('free-paced')!;
    expect(statuses).to.have.length(200);
    expect(new Set(statuses)).to.deep.equal(new Set([201]));
    expect(stack.now() - (MINUTE_START + 18_000), 'the 200 requests took at least three more windows').to.be.at.least(3 * 60_000 - 18_000);
    expect(client.rateLimit?.limit).to.equal(60);
  });

  it('stops at a ban with api_key_banned and its end, sending nothing more', async () => {
    for (let index = 0; index < 12; index += 1) await stack.request('/v1/pets', 'banme');
    const banEnd = Math.ceil(stack.now() / 1000) * 1000 + 900_000;
    const client = clientFor('banme');
    const error = await client.createPet({ name: 'Rex', categoryId: 1 }).then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).to.be.instanceOf(PetstoreError);
    expect(error).to.include({ code: 'api_key_banned', status: 429 });
    expect((error as PetstoreError).requestId).to.be.a('string');
    expect(Math.abs((error as PetstoreError).bannedUntil!.getTime() - banEnd)).to.be.at.most(1000);
    expect(seen.get('banme')).to.deep.equal([429]);
  });

  describe('through a proxy that loses answers', () => {
    let proxy: CuttingProxy;

    beforeEach(async () => {
      proxy = await startCuttingProxy(new URL(stack.baseUrl));
    });

    afterEach(async () => {
      await proxy.close();
    });

    it('creates exactly one pet when the first answer to a create is dropped', async () => {
      const client = clientFor('bulk', { baseUrl: proxy.url });
      proxy.cutNextAnswers(1);
      const created = await client.createPet({ name: 'Once', categoryId: 3 });
      expect(proxy.cuts, 'the first answer was lost').to.equal(1);
      const stored = [];
      for await (const pet of clientFor('bulk').listPets()) stored.push(pet);
      expect(stored).to.deep.equal([created]);
    });
  });
});
