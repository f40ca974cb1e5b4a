import { expect } from 'chai';
import { createPetstoreClient, PetstoreError, type PetstoreClientOptions } from '../../src';
import type { Int64Mode } from '../../src/types';
import { ownTime, type FakeTime } from '../support/fake-time';
import { type Answer, errorAnswer, json, scriptedFetch } from '../support/scripted-fetch';

const START = Date.UTC(2030, 0, 1, 12, 0, 18);
const PET = '{"id":9223372036854775807,"name":"Rex","categoryId":9007199254740993,"status":"available"}';
const limitHeaders = (remaining: number, reset = START / 1000 + 42) => ({
  'X-RateLimit-Limit': '60',
  'X-RateLimit-Remaining': String(remaining),
  'X-RateLimit-Reset': String(reset),
});

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

async function drain<T>(iterator: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of iterator) items.push(item);
  return items;
}

describe('petstore client', () => {
  let time: FakeTime;

  function clientFor<Mode extends Int64Mode = 'bigint'>(answers: Answer[], options: Partial<PetstoreClientOptions<Mode>> = {}) {
    const script = scriptedFetch(answers);
    const client = createPetstoreClient<Mode>({
      baseUrl: 'http://gateway.test',
      apiKey: 'secret',
      fetch: script.fetch,
      now: time.now,
      sleep: time.sleep,
      random: () => 0.5,
      retry: { baseDelayMs: 100, maxDelayMs: 1000, budgetMs: 70_000 },
      ...options,
    });
    return { client, sent: script.sent };
  }

  beforeEach(() => {
    time = ownTime(START);
  });

  describe('updatePet and deletePet', () => {
    it('sends a merge patch with exact int64, If-Match and an Idempotency-Key, and answers the pet with its ETag', async () => {
      const { client, sent } = clientFor([json(200, PET, { ETag: '"4"' })]);
      const changed = await client.updatePet(9223372036854775807n, { categoryId: 9007199254740993n, status: 'sold' }, { ifMatch: '"3"' });
      expect(changed).to.deep.equal({
        pet: { id: 9223372036854775807n, name: 'Rex', categoryId: 9007199254740993n, status: 'available' },
        etag: '"4"',
      });
      expect(sent[0]!.method).to.equal('PATCH');
      expect(sent[0]!.url).to.equal('http://gateway.test/v1/pets/9223372036854775807');
      expect(sent[0]!.body).to.equal('{"categoryId":9007199254740993,"status":"sold"}');
      expect(sent[0]!.headers.get('content-type')).to.equal('application/merge-patch+json');
      expect(sent[0]!.headers.get('if-match')).to.equal('"3"');
      expect(sent[0]!.headers.get('idempotency-key')).to.match(/^[0-9a-f-]{36}$/);
    });

    it('retries a change on a lost answer with the same Idempotency-Key', async () => {
      const { client, sent } = clientFor([new TypeError('socket hang up'), json(200, PET, { ETag: '"1"' })]);
      await client.updatePet('1', { name: 'Rex' });
      expect(sent).to.have.length(2);
      expect(sent[1]!.headers.get('idempotency-key')).to.equal(sent[0]!.headers.get('idempotency-key'));
    });

    it('fails precondition_failed with the current ETag, and invalid_transition, without retrying', async () => {
      const { client, sent } = clientFor([errorAnswer(412, 'precondition_failed', { ETag: '"9"' }), errorAnswer(409, 'invalid_transition')]);
      const stale = await rejection(client.updatePet('1', { status: 'sold' }, { ifMatch: '"2"' }));
      expect(stale).to.be.instanceOf(PetstoreError);
      expect(stale).to.include({ code: 'precondition_failed', status: 412, currentEtag: '"9"' });
      expect(await rejection(client.deletePet('1'))).to.include({ code: 'invalid_transition', currentEtag: undefined });
      expect(sent).to.have.length(2);
    });

    it('deletes with If-Match; a 404 after a lost answer counts as the delete, a first 404 does not', async () => {
      const { client, sent } = clientFor([new TypeError('socket hang up'), errorAnswer(404, 'not_found'), errorAnswer(404, 'not_found')]);
      await client.deletePet(7n, { ifMatch: '"0"' });
      expect(sent.map((request) => [request.method, request.url, request.headers.get('if-match')])).to.deep.equal([
        ['DELETE', 'http://gateway.test/v1/pets/7', '"0"'],
        ['DELETE', 'http://gateway.test/v1/pets/7', '"0"'],
      ]);
      expect(await rejection(client.deletePet(7n))).to.include({ code: 'not_found', status: 404 });
    });

    it('counts a 404 after a 503 as the delete: the pet service may have deleted the pet before its connection dropped', async () => {
      const { client, sent } = clientFor([errorAnswer(503, 'service_unavailable'), errorAnswer(404, 'not_found')]);
      await client.deletePet(7n);
      expect(sent).to.have.length(2);
    });

    it('refuses an id that is not a positive int64 before sending: above 9223372036854775807 too, however many digits', async () => {
      const { client, sent } = clientFor([]);
      expect(await rejection(client.updatePet('07', { name: 'x' }))).to.be.instanceOf(RangeError);
      expect(await rejection(client.deletePet('-1'))).to.be.instanceOf(RangeError);
      for (const id of ['9223372036854775808', '9999999999999999999', 9223372036854775808n]) {
        expect(await rejection(client.updatePet(id, { name: 'x' })), String(id)).to.be.instanceOf(RangeError);
        expect(await rejection(client.deletePet(id)), String(id)).to.be.instanceOf(RangeError).with.property('message', `id "${id}" is not a positive int64 in plain decimal`);
      }
      expect(sent).to.have.length(0);
    });

    it('sends the largest int64 id', async () => {
      const { client, sent } = clientFor([errorAnswer(404, 'not_found')]);
      expect(await rejection(client.deletePet(9223372036854775807n))).to.include({ code: 'not_found' });
      expect(sent.map((request) => request.url)).to.deep.equal(['http://gateway.test/v1/pets/9223372036854775807']);
    });
  });

  describe('createPet', () => {
    it('sends the key, a JSON body with exact int64, an Idempotency-Key and a request id', async () => {
      const { client, sent } = clientFor([json(201, PET)]);
      const pet = await client.createPet({ name: 'Rex', categoryId: 9007199254740993n });
      expect(pet).to.deep.equal({ id: 9223372036854775807n, name: 'Rex', categoryId: 9007199254740993n, status: 'available' });
      expect(sent).to.have.length(1);
      expect(sent[0]!.method).to.equal('POST');
      expect(sent[0]!.url).to.equal('http://gateway.test/v1/pets');
      expect(sent[0]!.body).to.equal('{"name":"Rex","categoryId":9007199254740993}');
      expect(sent[0]!.headers.get('authorization')).to.equal('Bearer secret');
      expect(sent[0]!.headers.get('content-type')).to.equal('application/json');
      expect(sent[0]!.headers.get('idempotency-key')).to.match(/^[0-9a-f-]{36}$/);
      expect(sent[0]!.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
    });

    it('gives int64 fields as decimal strings when asked', async () => {
      const { client } = clientFor<'string'>([json(201, PET)], { int64: 'string' });
      expect(await client.createPet({ name: 'Rex', categoryId: '9007199254740993' })).to.deep.include({
        id: '9223372036854775807',
        categoryId: '9007199254740993',
      });
    });

    it('retries a lost answer with the same Idempotency-Key and request id', async () => {
      const { client, sent } = clientFor([new TypeError('fetch failed'), json(201, PET, { 'Idempotent-Replayed': 'true' })]);
      await client.createPet({ name: 'Rex', categoryId: 1 }, { idempotencyKey: 'my-key' });
      expect(sent.map((request) => request.headers.get('idempotency-key'))).to.deep.equal(['my-key', 'my-key']);
      expect(sent[1]!.headers.get('x-request-id')).to.equal(sent[0]!.headers.get('x-request-id'));
      expect(time.sleeps).to.deep.equal([50]);
    });

    it('uses a fresh Idempotency-Key per call', async () => {
      const { client, sent } = clientFor([json(201, PET), json(201, PET)]);
      await client.createPet({ name: 'Rex', categoryId: 1 });
      await client.createPet({ name: 'Rex', categoryId: 1 });
      expect(sent[0]!.headers.get('idempotency-key')).not.to.equal(sent[1]!.headers.get('idempotency-key'));
    });
  });

  describe('errors', () => {
    it('throws one error type with code, message, status and the request id', async () => {
      const { client } = clientFor([
        json(400, '{"code":"invalid_request","message":"name: must not be empty","status":400}', { 'X-Request-Id': 'req-1' }),
      ]);
      const error = await rejection(client.createPet({ name: '', categoryId: 1 }));
      expect(error).to.be.instanceOf(PetstoreError);
      expect(error).to.include({ code: 'invalid_request', message: 'name: must not be empty', status: 400, requestId: 'req-1' });
      expect(time.sleeps).to.deep.equal([]);
    });

    it('does not retry a 500 or a 409, and reports a body outside the contract as unexpected_response', async () => {
      const { client, sent } = clientFor([new Response('<html>oops</html>', { status: 500 }), errorAnswer(409, 'conflict')]);
      expect(await rejection(client.createPet({ name: 'Rex', categoryId: 1 }))).to.include({ code: 'unexpected_response', status: 500 });
      expect(await rejection(client.createPet({ name: 'Rex', categoryId: 1 }))).to.include({ code: 'conflict', status: 409 });
      expect(sent).to.have.length(2);
    });

    it('reports a connection that never answers, after its retries, as network_error with status 0', async () => {
      const { client, sent } = clientFor(Array.from({ length: 20 }, () => new TypeError('fetch failed')), {
        retry: { baseDelayMs: 100, maxDelayMs: 1000, budgetMs: 3000 },
      });
      const error = await rejection(drain(client.listPets()));
      expect(error).to.include({ code: 'network_error', status: 0 });
      expect((error as PetstoreError).requestId).to.equal(sent[0]!.headers.get('x-request-id'));
      expect(time.sleeps).to.deep.equal([50, 100, 200, 400, 500, 500, 500, 500]);
    });
  });

  describe('rate limits', () => {
    it('waits Retry-After plus jittered backoff on 429 rate_limited, then retries', async () => {
      const { client, sent } = clientFor([
        errorAnswer(429, 'rate_limited', { 'Retry-After': '42', ...limitHeaders(0) }),
        errorAnswer(429, 'rate_limited', { 'Retry-After': '1', ...limitHeaders(0) }),
        json(200, `[${PET}]`, limitHeaders(59, START / 1000 + 102)),
      ]);
      expect(await drain(client.listPets())).to.have.length(1);
      expect(sent).to.have.length(3);
      expect(time.sleeps).to.deep.equal([42_050, 1100]);
    });

    it('gives up with the 429 at once when Retry-After would overrun the budget', async () => {
      const { client, sent } = clientFor([errorAnswer(429, 'rate_limited', { 'Retry-After': '3600', ...limitHeaders(0) })]);
      const error = await rejection(client.createPet({ name: 'Rex', categoryId: 1 }));
      expect(error).to.include({ code: 'rate_limited', status: 429, retryAfterMs: 3_600_000 });
      expect(sent).to.have.length(1);
      expect(time.sleeps).to.deep.equal([]);
    });

    it('gives up with the 429 at once when Retry-After would overrun the call\'s timeout', async () => {
      const { client, sent } = clientFor([errorAnswer(429, 'rate_limited', { 'Retry-After': '10', ...limitHeaders(0) })]);
      const error = await rejection(client.createPet({ name: 'Rex', categoryId: 1 }, { timeoutMs: 5000 }));
      expect(error).to.include({ code: 'rate_limited', retryAfterMs: 10_000 });
      expect(sent).to.have.length(1);
      expect(time.sleeps).to.deep.equal([]);
    });

    it('backs off exponentially, capped, on 503 and 504, and stops within the budget', async () => {
      const { client, sent } = clientFor(
        Array.from({ length: 20 }, (_, index) => errorAnswer(index % 2 ? 504 : 503, index % 2 ? 'gateway_timeout' : 'service_unavailable')),
        { random: () => 0.999, retry: { baseDelayMs: 100, maxDelayMs: 1000, budgetMs: 4000 } },
      );
      const error = await rejection(client.createPet({ name: 'Rex', categoryId: 1 }));
      expect(time.sleeps).to.deep.equal([99, 199, 399, 799, 999, 999]);
      expect(sent).to.have.length(7);
      expect((error as PetstoreError).code).to.be.oneOf(['service_unavailable', 'gateway_timeout']);
      expect(time.now() - START).to.be.at.most(4000);
    });

    it('waits Retry-After plus jittered backoff on a shed 503, for that call only, and gives up at once past the budget', async () => {
      const { client, sent } = clientFor([
        errorAnswer(503, 'service_unavailable', { 'Retry-After': '2', ...limitHeaders(58) }),
        json(201, PET),
        json(201, PET),
      ]);
      expect((await client.createPet({ name: 'Rex', categoryId: 1 })).name).to.equal('Rex');
      expect(sent).to.have.length(2);
      expect(time.sleeps, 'Retry-After, then the first backoff').to.deep.equal([2050]);
      expect(sent[1]!.headers.get('idempotency-key'), 'the same create').to.equal(sent[0]!.headers.get('idempotency-key'));
      // Unlike a 429, a shed request holds back no other call of the client.
      expect((await client.createPet({ name: 'Rex', categoryId: 1 })).name).to.equal('Rex');
      expect(time.sleeps).to.deep.equal([2050]);

      const late = clientFor([errorAnswer(503, 'service_unavailable', { 'Retry-After': '120', ...limitHeaders(58) })]);
      expect(await rejection(late.client.createPet({ name: 'Rex', categoryId: 1 }))).to.include({ code: 'service_unavailable', retryAfterMs: 120_000 });
      expect(late.sent).to.have.length(1);
    });

    it('stops at api_key_banned with the ban end, without retrying', async () => {
      const banEnd = START / 1000 + 900;
      const { client, sent } = clientFor([
        errorAnswer(429, 'api_key_banned', { 'Retry-After': '900', ...limitHeaders(0, banEnd), 'X-Request-Id': 'req-ban' }),
      ]);
      const error = await rejection(drain(client.listPets()));
      expect(error).to.be.instanceOf(PetstoreError);
      expect(error).to.include({ code: 'api_key_banned', status: 429, requestId: 'req-ban' });
      expect((error as PetstoreError).bannedUntil?.getTime()).to.equal(banEnd * 1000);
      expect(sent).to.have.length(1);
      expect(time.sleeps).to.deep.equal([]);
    });

    it('exposes the last X-RateLimit-* values', async () => {
      const { client } = clientFor([json(201, PET, limitHeaders(17))]);
      expect(client.rateLimit).to.equal(undefined);
      await client.createPet({ name: 'Rex', categoryId: 1 });
      expect(client.rateLimit).to.deep.equal({ limit: 60, remaining: 17, reset: START / 1000 + 42 });
    });
  });

  describe('listPets', () => {
    it('follows Link rel="next", keeping the limit and the filter', async () => {
      const { client, sent } = clientFor([
        json(200, `[${PET}]`, { Link: '</v1/pets?limit=1&status=available&cursor=abc>; rel="next"' }),
        json(200, `[${PET.replace('9223372036854775807', '9223372036854775806')}]`, {
          Link: '</v1/pets?limit=1&status=available&cursor=def>; rel="next"',
        }),
        json(200, '[]'),
      ]);
      const pets = await drain(client.listPets({ limit: 1, status: 'available' }));
      expect(pets.map((pet) => pet.id)).to.deep.equal([9223372036854775807n, 9223372036854775806n]);
      expect(sent.map((request) => request.url)).to.deep.equal([
        'http://gateway.test/v1/pets?limit=1&status=available',
        'http://gateway.test/v1/pets?limit=1&status=available&cursor=abc',
        'http://gateway.test/v1/pets?limit=1&status=available&cursor=def',
      ]);
    });

    it('never sends the key to another origin named by Link', async () => {
      const { client, sent } = clientFor([json(200, `[${PET}]`, { Link: '<http://evil.test/v1/pets?cursor=x>; rel="next"' })]);
      const pets: unknown[] = [];
      const error = await rejection(
        (async () => {
          for await (const pet of client.listPets()) pets.push(pet);
        })(),
      );
      expect(error).to.include({ code: 'unexpected_response' });
      expect(pets).to.have.length(1);
      expect(sent).to.have.length(1);
    });

    it('ignores links with other relations', async () => {
      const { client, sent } = clientFor([json(200, `[${PET}]`, { Link: '</v1/pets>; rel="successor-version"' })]);
      expect(await drain(client.listPets())).to.have.length(1);
      expect(sent).to.have.length(1);
    });
  });

  describe('cancellation', () => {
    it('rejects with AbortError when the signal aborts, even during a wait', async () => {
      const controller = new AbortController();
      const { client, sent } = clientFor([errorAnswer(503, 'service_unavailable')], {
        sleep: (_ms, signal) =>
          new Promise((_resolve, reject) => {
            signal.addEventListener('abort', () => reject(signal.reason));
            controller.abort();
          }),
      });
      const error = await rejection(client.createPet({ name: 'Rex', categoryId: 1 }, { signal: controller.signal }));
      expect((error as Error).name).to.equal('AbortError');
      expect(sent).to.have.length(1);
    });

    it('rejects with TimeoutError when the call outlasts its timeout', async () => {
      const { client } = clientFor([
        (_request, signal) =>
          new Promise((_resolve, reject) => {
            signal.addEventListener('abort', () => reject(signal.reason));
          }),
      ]);
      const error = await rejection(client.createPet({ name: 'Rex', categoryId: 1 }, { timeoutMs: 20 }));
      expect((error as Error).name).to.equal('TimeoutError');
    });
  });
});
