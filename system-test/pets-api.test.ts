import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { expect } from 'chai';
import { MemoryPetRepository } from '../pet-service/src/store/memory-pet-repository';
import { MongoPetRepository } from '../pet-service/src/store/mongo-pet-repository';
import type { PetRepository } from '../pet-service/src/store/pet-repository';
import { SUNSET_AT } from '../gateway/src/http/deprecation';
import { startMongoOrSkip, type MongoServer } from './support/mongo-server';
import { expectMatchesContract, fetchWithinContract } from './support/openapi-validator';
import { startTestStack, TEST_KEYS, type TestStack } from './support/test-stack';

const AUTH = { authorization: `Bearer ${TEST_KEYS.free}` };
const JSON_AUTH = { ...AUTH, 'content-type': 'application/json' };
const INT64_MAX = '9223372036854775807';

interface Reply {
  status: number;
  headers: Headers;
  text: string;
  body: unknown;
}

describe('gateway /v1 pets API (real gateway + real gRPC pet service), embedded store', () => {
  describePetsApi(async () => new MemoryPetRepository());
});

describe('gateway /v1 pets API (real gateway + real gRPC pet service), MongoDB store', function () {
  let server: MongoServer;
  before(async function () {
    server = await startMongoOrSkip(this);
  });
  after(async () => {
    await server?.close();
  });
  describePetsApi(() => MongoPetRepository.connect({ uri: server.uri, database: server.freshDatabase(), timeoutMs: 2000 }));
});

/** The whole HTTP contract, against a fresh store from `openStore` for every test. */
function describePetsApi(openStore: () => Promise<PetRepository>): void {
  /** Sends bytes as they are (latin1), for what fetch refuses to send; resolves with the whole reply. */
  const rawRequest = (bytes: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const socket = connect(Number(new URL(stack.baseUrl).port), '127.0.0.1', () => socket.end(Buffer.from(bytes, 'latin1')));
      let reply = '';
      socket.on('data', (chunk: Buffer) => (reply += chunk.toString('latin1')));
      socket.on('end', () => resolve(reply));
      socket.on('error', reject);
    });

  let stack: TestStack;

  beforeEach(async () => {
    stack = await startTestStack({ repository: await openStore() });
  });

  afterEach(async () => {
    await stack.close();
  });

  async function call(method: 'get' | 'post' | 'patch' | 'delete', path: string, init: RequestInit = {}): Promise<Reply> {
    const response = await fetch(stack.baseUrl + path, { method: method.toUpperCase(), ...init });
    const text = await response.text();
    const template = /^\/v1\/pets\/[^/?]+/.test(path) ? '/pets/{petId}' : '/pets';
    const body = expectMatchesContract(method, template, { status: response.status, headers: response.headers, text });
    return { status: response.status, headers: response.headers, text, body };
  }

  const create = (pet: unknown, headers: Record<string, string> = JSON_AUTH) =>
    call('post', '/v1/pets', { headers, body: typeof pet === 'string' ? pet : JSON.stringify(pet) });

  function expectError(reply: Reply, status: number, code: string, field?: string): void {
    expect(reply.status, reply.text).to.equal(status);
    expect(reply.body).to.include({ code, status });
    if (field !== undefined) expect((reply.body as { message: string }).message).to.match(new RegExp(`^${field}: `));
  }

  describe('authentication', () => {
    it('rejects a request without Authorization with 401 and a Bearer challenge', async () => {
      const reply = await call('get', '/v1/pets');
      expectError(reply, 401, 'unauthorized');
      expect(reply.headers.get('www-authenticate')).to.equal('Bearer realm="petstore"');
    });

    it('rejects an unknown key with error="invalid_token"', async () => {
      const reply = await call('get', '/v1/pets', { headers: { authorization: 'Bearer not-a-key' } });
      expectError(reply, 401, 'unauthorized');
      expect(reply.headers.get('www-authenticate')).to.equal('Bearer realm="petstore", error="invalid_token"');
    });

    it('rejects other schemes and an empty token', async () => {
      for (const authorization of [`Basic ${TEST_KEYS.free}`, 'Bearer', 'Bearer ', TEST_KEYS.free]) {
        expectError(await call('get', '/v1/pets', { headers: { authorization } }), 401, 'unauthorized');
      }
    });

    it('matches the scheme case-insensitively', async () => {
      for (const scheme of ['bearer', 'BEARER', 'bEaReR']) {
        const reply = await call('get', '/v1/pets', { headers: { authorization: `${scheme} ${TEST_KEYS.free}` } });
        expect(reply.status).to.equal(200);
      }
    });

    it('guards every operation, including unknown methods', async () => {
      expectError(await create({ name: 'a', categoryId: 1 }, { 'content-type': 'application/json' }), 401, 'unauthorized');
      expectError(await call('get', '/v1/pets/1'), 401, 'unauthorized');
    });

    it('serves the OpenAPI document without authentication', async () => {
      const response = await fetch(`${stack.baseUrl}/v1/openapi.json`);
      expect(response.status).to.equal(200);
      const text = await response.text();
      const document = JSON.parse(text) as { openapi: string; paths: Record<string, unknown> };
      expect(document.openapi).to.equal('3.1.0');
      expect(Object.keys(document.paths)).to.deep.equal(['/pets', '/pets/{petId}']);
      expect(text).to.include(`"maximum":${INT64_MAX}`);
    });
  });

  describe('POST /v1/pets with Idempotency-Key', () => {
    const withKey = (key: string, secret: string = TEST_KEYS.free) => ({
      authorization: `Bearer ${secret}`,
      'content-type': 'application/json',
      'idempotency-key': key,
    });
    const listedIds = async () => ((await call('get', '/v1/pets', { headers: AUTH })).body as Array<{ id: number }>).map((pet) => pet.id);

    it('answers a retry with the first result, marked as a replay, and creates nothing', async () => {
      const first = await create({ name: 'Rex', categoryId: 7 }, withKey('order-42'));
      const retry = await create({ name: 'Rex', categoryId: 7 }, withKey('order-42'));
      expect(first.status).to.equal(201);
      expect(first.headers.get('idempotent-replayed')).to.equal(null);
      expect(retry.status).to.equal(201);
      expect(retry.text).to.equal(first.text);
      expect(retry.headers.get('location')).to.equal(first.headers.get('location'));
      expect(retry.headers.get('idempotent-replayed')).to.equal('true');
      expect(await listedIds()).to.deep.equal([(first.body as { id: number }).id]);
    });

    it('treats an omitted status and "available" as the same request', async () => {
      const first = await create({ name: 'Rex', categoryId: 7 }, withKey('same'));
      const retry = await create({ name: 'Rex', categoryId: 7, status: 'available' }, withKey('same'));
      expect(retry.text).to.equal(first.text);
    });

    it('refuses the same key with a different body: 409 conflict', async () => {
      await create({ name: 'Rex', categoryId: 7 }, withKey('order-43'));
      const reply = await create({ name: 'Max', categoryId: 7 }, withKey('order-43'));
      expectError(reply, 409, 'conflict', 'Idempotency-Key');
      expect(await listedIds()).to.have.length(1);
    });

    it('scopes keys to the API key, so two clients never share a result', async () => {
      const mine = await create({ name: 'Rex', categoryId: 7 }, withKey('k'));
      const theirs = await create({ name: 'Rex', categoryId: 7 }, withKey('k', TEST_KEYS.pro));
      expect((theirs.body as { id: number }).id).to.not.equal((mine.body as { id: number }).id);
      expect(theirs.headers.get('idempotent-replayed')).to.equal(null);
    });

    for (const [label, key] of [
      ['empty', ''],
      ['over 255 characters', 'k'.repeat(256)],
      ['with a space', 'two words'],
      ['with a non-ASCII character', 'clé'],
    ] as const) {
      it(`rejects a key ${label} with 400 naming Idempotency-Key`, async () => {
        const reply = await call('post', '/v1/pets', { headers: withKey(key), body: '{"name":"a","categoryId":1}' });
        expectError(reply, 400, 'invalid_request', 'Idempotency-Key');
        expect(await listedIds()).to.deep.equal([]);
      });
    }

    it('rejects a key with raw non-ASCII bytes with 400 naming Idempotency-Key', async () => {
      const reply = await rawRequest(
        'POST /v1/pets HTTP/1.1\r\nHost: x\r\nConnection: close\r\n' +
          `Authorization: Bearer ${TEST_KEYS.free}\r\nContent-Type: application/json\r\nContent-Length: 27\r\n` +
          'Idempotency-Key: \xff\xfe\r\n\r\n{"name":"a","categoryId":1}',
      );
      expect(reply).to.match(/^HTTP\/1\.1 400 /);
      expect(reply).to.include('"message":"Idempotency-Key: ');
    });
  });

  describe('POST /v1/pets', () => {
    it('creates a pet: 201, Location, service-assigned id, status defaulting to available', async () => {
      const reply = await create({ name: 'Rex', categoryId: 7 });
      expect(reply.status).to.equal(201);
      expect(reply.text).to.equal('{"id":1,"name":"Rex","categoryId":7,"status":"available"}');
      expect(reply.headers.get('location')).to.equal('/v1/pets/1');
    });

    it('keeps the given status', async () => {
      const reply = await create({ name: 'Tom', categoryId: 1, status: 'sold' });
      expect(reply.body).to.include({ status: 'sold' });
    });

    it('round-trips int64 values up to 2^63-1 exactly', async () => {
      const reply = await create(`{"name":"Big","categoryId":${INT64_MAX}}`);
      expect(reply.status).to.equal(201);
      expect(reply.text).to.include(`"categoryId":${INT64_MAX}`);
      const listed = await call('get', '/v1/pets', { headers: AUTH });
      expect(listed.text).to.include(`"categoryId":${INT64_MAX}`);
    });

    it('accepts a name of 100 code points, emoji included', async () => {
      expect((await create({ name: '🐶'.repeat(100), categoryId: 1 })).status).to.equal(201);
    });

    const badBodies: Array<[string, string, string]> = [
      ['missing name', '{"categoryId":1}', 'name'],
      ['missing categoryId', '{"name":"a"}', 'categoryId'],
      ['empty name', '{"name":"","categoryId":1}', 'name'],
      ['name over 100 characters', `{"name":"${'a'.repeat(101)}","categoryId":1}`, 'name'],
      ['name not a string', '{"name":5,"categoryId":1}', 'name'],
      ['categoryId as a string', '{"name":"a","categoryId":"1"}', 'categoryId'],
      ['categoryId fraction', '{"name":"a","categoryId":1.5}', 'categoryId'],
      ['categoryId negative', '{"name":"a","categoryId":-1}', 'categoryId'],
      ['categoryId zero', '{"name":"a","categoryId":0}', 'categoryId'],
      ['categoryId 2^63', '{"name":"a","categoryId":9223372036854775808}', 'categoryId'],
      ['categoryId rounded by exponent', '{"name":"a","categoryId":9.3e18}', 'categoryId'],
      ['categoryId huge exponent', '{"name":"a","categoryId":1e400}', 'categoryId'],
      ['status outside the enum', '{"name":"a","categoryId":1,"status":"lost"}', 'status'],
      ['an unknown field', '{"name":"a","categoryId":1,"id":5}', 'id'],
      ['a __proto__ key', '{"name":"a","categoryId":1,"__proto__":{"admin":true}}', '__proto__'],
      ['an array', '[{"name":"a","categoryId":1}]', 'body'],
      ['a string', '"pet"', 'body'],
      ['null', 'null', 'body'],
      ['malformed JSON', '{"name":', 'body'],
      ['an empty body', '', 'body'],
    ];
    for (const [what, body, field] of badBodies) {
      it(`gives 400 naming ${field} for ${what}`, async () => {
        expectError(await create(body), 400, 'invalid_request', field);
      });
    }

    it('gives 415 for a body that is not application/json', async () => {
      expectError(await create('{"name":"a","categoryId":1}', { ...AUTH, 'content-type': 'text/plain' }), 415, 'unsupported_media_type');
      expectError(await create('{"name":"a","categoryId":1}', AUTH), 415, 'unsupported_media_type');
    });

    it('accepts application/json with a charset parameter', async () => {
      const reply = await create({ name: 'a', categoryId: 1 }, { ...AUTH, 'content-type': 'application/json; charset=utf-8' });
      expect(reply.status).to.equal(201);
    });

    it('gives 413 for a body over 64 KiB', async () => {
      const reply = await create(`{"name":"a","categoryId":1,"pad":"${'x'.repeat(64 * 1024)}"}`);
      expectError(reply, 413, 'payload_too_large');
    });

    it('creates nothing for a rejected body', async () => {
      await create('{"name":"","categoryId":1}');
      expect((await call('get', '/v1/pets', { headers: AUTH })).text).to.equal('[]');
    });
  });

  describe('GET /v1/pets', () => {
    async function seed(count: number, status?: (index: number) => string): Promise<void> {
      for (let index = 0; index < count; index += 1) {
        const reply = await create({ name: `pet${index}`, categoryId: 1, status: status?.(index) ?? 'available' });
        expect(reply.status).to.equal(201);
      }
    }

    it('returns a bare array, 20 by default, in id order', async () => {
      await seed(25);
      const reply = await call('get', '/v1/pets', { headers: AUTH });
      const ids = (reply.body as Array<{ id: number }>).map((pet) => pet.id);
      expect(ids).to.deep.equal(Array.from({ length: 20 }, (_, index) => index + 1));
    });

    it('pages through everything with Link rel="next", keeping limit and status', async () => {
      const statuses = ['available', 'pending', 'sold'];
      await seed(23, (index) => statuses[index % 3]!);
      const seen: number[] = [];
      let path: string | undefined = '/v1/pets?limit=3&status=pending';
      while (path !== undefined) {
        const reply = await call('get', path, { headers: AUTH });
        expect(reply.status).to.equal(200);
        for (const pet of reply.body as Array<{ id: number; status: string }>) {
          expect(pet.status).to.equal('pending');
          seen.push(pet.id);
        }
        const link = reply.headers.get('link');
        if (link === null) break;
        const match = /^<(\/v1\/pets\?limit=3&status=pending&cursor=[^>]+)>; rel="next"$/.exec(link);
        expect(match, link).to.not.equal(null);
        path = match![1];
      }
      expect(seen).to.deep.equal([2, 5, 8, 11, 14, 17, 20, 23]);
    });

    it('omits Link on the last page', async () => {
      await seed(2);
      const reply = await call('get', '/v1/pets?limit=2', { headers: AUTH });
      expect((reply.body as unknown[]).length).to.equal(2);
      expect(reply.headers.get('link')).to.equal(null);
    });

    for (const query of ['limit=0', 'limit=101', 'limit=-1', 'limit=1.5', 'limit=abc', 'limit=', 'limit=1&limit=2']) {
      it(`gives 400 naming limit for ?${query}`, async () => {
        expectError(await call('get', `/v1/pets?${query}`, { headers: AUTH }), 400, 'invalid_request', 'limit');
      });
    }

    it('accepts limit 1 and 100', async () => {
      for (const limit of [1, 100]) expect((await call('get', `/v1/pets?limit=${limit}`, { headers: AUTH })).status).to.equal(200);
    });

    for (const query of ['status=lost', 'status=', 'status=AVAILABLE', 'status=sold&status=pending']) {
      it(`gives 400 naming status for ?${query}`, async () => {
        expectError(await call('get', `/v1/pets?${query}`, { headers: AUTH }), 400, 'invalid_request', 'status');
      });
    }

    it('gives 400 for a malformed or tampered cursor', async () => {
      await seed(3);
      const first = await call('get', '/v1/pets?limit=1', { headers: AUTH });
      const cursor = decodeURIComponent(/cursor=([^>]+)>/.exec(first.headers.get('link')!)![1]!);
      const raw = Buffer.from(cursor, 'base64url');
      raw[raw.length - 14] = raw[raw.length - 14]! ^ 1;
      for (const bad of ['x', 'AAAA', raw.toString('base64url'), cursor.slice(1)]) {
        const reply = await call('get', `/v1/pets?limit=1&cursor=${encodeURIComponent(bad)}`, { headers: AUTH });
        expectError(reply, 400, 'invalid_request', 'cursor');
      }
    });

    it('gives 400 for a cursor replayed under another status filter', async () => {
      await seed(3);
      const first = await call('get', '/v1/pets?limit=1', { headers: AUTH });
      const cursor = /cursor=([^>]+)>/.exec(first.headers.get('link')!)![1]!;
      expectError(await call('get', `/v1/pets?limit=1&status=sold&cursor=${cursor}`, { headers: AUTH }), 400, 'invalid_request', 'cursor');
    });
  });

  describe('GET /v1/pets/{petId} (deprecated)', () => {
    it('returns the pet with Deprecation, Sunset and a successor Link', async () => {
      await create({ name: 'Rex', categoryId: 3 });
      const reply = await call('get', '/v1/pets/1', { headers: AUTH });
      expect(reply.status).to.equal(200);
      expect(reply.body).to.deep.equal({ id: 1, name: 'Rex', categoryId: 3, status: 'available' });
      expect(reply.headers.get('deprecation')).to.match(/^@\d+$/);
      expect(reply.headers.get('sunset')).to.equal('Thu, 05 Dec 2030 00:00:00 GMT');
      expect(reply.headers.get('link')).to.equal('</v1/pets>; rel="successor-version"');
    });

    it('gives 404 for an unknown id, still with the deprecation headers', async () => {
      const reply = await call('get', `/v1/pets/${INT64_MAX}`, { headers: AUTH });
      expectError(reply, 404, 'not_found');
      expect(reply.headers.get('sunset')).to.equal('Thu, 05 Dec 2030 00:00:00 GMT');
    });

    for (const petId of ['abc', '0', '-1', '1.5', '01', '9223372036854775808', '99999999999999999999', '%20', '%E0']) {
      it(`gives 400 naming petId for ${petId}`, async () => {
        expectError(await call('get', `/v1/pets/${petId}`, { headers: AUTH }), 400, 'invalid_request', 'petId');
      });
    }

    it('answers 410 from the sunset instant on, and 200 just before it', async () => {
      await create({ name: 'Rex', categoryId: 3 });
      stack.setNow(SUNSET_AT - 1);
      expect((await call('get', '/v1/pets/1', { headers: AUTH })).status).to.equal(200);
      stack.setNow(SUNSET_AT);
      expectError(await call('get', '/v1/pets/1', { headers: AUTH }), 410, 'gone');
    });
  });

  describe('PATCH and DELETE /v1/pets/{petId}, ETags', () => {
    const MERGE_PATCH = { ...AUTH, 'content-type': 'application/merge-patch+json' };
    const patch = (id: string, body: unknown, headers: Record<string, string> = {}) =>
      call('patch', `/v1/pets/${id}`, { headers: { ...MERGE_PATCH, ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
    const remove = (id: string, headers: Record<string, string> = {}) => call('delete', `/v1/pets/${id}`, { headers: { ...AUTH, ...headers } });
    const read = (id: string, headers: Record<string, string> = {}) => call('get', `/v1/pets/${id}`, { headers: { ...AUTH, ...headers } });
    const created = async (status = 'available') => {
      const reply = await create({ name: 'Rex', categoryId: 3, status });
      expect(reply.status).to.equal(201);
      return { id: String((reply.body as { id: number }).id), etag: reply.headers.get('etag')! };
    };

    it('gives every answer of one pet a strong ETag that changes with every change, and only then', async () => {
      const pet = await created();
      expect(pet.etag).to.equal('"0"');
      expect((await read(pet.id)).headers.get('etag')).to.equal('"0"');
      const renamed = await patch(pet.id, { name: 'Max' });
      expect(renamed.status, renamed.text).to.equal(200);
      expect(renamed.body).to.deep.equal({ id: Number(pet.id), name: 'Max', categoryId: 3, status: 'available' });
      expect(renamed.headers.get('etag')).to.equal('"1"');
      const same = await patch(pet.id, { name: 'Max', categoryId: 3 });
      expect([same.status, same.headers.get('etag')]).to.deep.equal([200, '"1"']);
      expect((await read(pet.id)).headers.get('etag')).to.equal('"1"');
      const list = await call('get', '/v1/pets', { headers: AUTH });
      expect(list.headers.get('etag')).to.equal(null);
    });

    it('moves a pet through the transition table, and refuses the rest with 409 invalid_transition naming both statuses', async () => {
      const pet = await created();
      for (const status of ['pending', 'available', 'sold']) {
        const reply = await patch(pet.id, { status });
        expect(reply.status, reply.text).to.equal(200);
        expect(reply.body).to.include({ status });
      }
      for (const status of ['available', 'pending', 'sold']) {
        const reply = await patch(pet.id, { status });
        expectError(reply, 409, 'invalid_transition', 'status');
        expect((reply.body as { message: string }).message).to.equal(`status: cannot change from sold to ${status}; sold is final`);
      }
      const pending = await created('pending');
      expect((await patch(pending.id, { status: 'pending' })).body).to.deep.include({
        message: 'status: cannot change from pending to pending; pending can change to available or sold',
      });
      // Not a transition, so not the status: a sold pet's name can still be corrected.
      expect((await patch(pet.id, { name: 'Corrected' })).status).to.equal(200);
    });

    it('applies If-Match: 412 precondition_failed with the current ETag when it names another, * for any existing pet', async () => {
      const pet = await created();
      const stale = await patch(pet.id, { status: 'pending' }, { 'if-match': '"7", W/"0"' });
      expectError(stale, 412, 'precondition_failed', 'If-Match');
      expect(stale.headers.get('etag')).to.equal('"0"');
      // Empty list elements are accepted and ignored (RFC 9110 section 5.6.1.2).
      const reserved = await patch(pet.id, { status: 'pending' }, { 'if-match': '"9", , "0",' });
      expect([reserved.status, reserved.headers.get('etag')]).to.deep.equal([200, '"1"']);
      expect((await patch(pet.id, { status: 'sold' }, { 'if-match': '"0"' })).status).to.equal(412);
      expect((await patch(pet.id, { status: 'sold' }, { 'if-match': '*' })).status).to.equal(200);
      expectError(await remove(pet.id, { 'if-match': '"1"' }), 412, 'precondition_failed');
      expect((await remove(pet.id, { 'if-match': ', "2"' })).status).to.equal(204);
      // RFC 9110 section 13.2.1: without the condition this is 404, so the condition is not evaluated.
      expectError(await patch(pet.id, { name: 'Max' }, { 'if-match': '*' }), 404, 'not_found');
    });

    it('answers 304 to If-None-Match with the current ETag on GET, 200 once the pet changed, and evaluates If-Match on GET', async () => {
      const pet = await created();
      const notModified = await fetch(`${stack.baseUrl}/v1/pets/${pet.id}`, { headers: { ...AUTH, 'if-none-match': 'W/"0",' } });
      expect([notModified.status, notModified.headers.get('etag'), await notModified.text()]).to.deep.equal([304, '"0"', '']);
      expect(notModified.headers.get('deprecation')).to.not.equal(null);
      await patch(pet.id, { categoryId: 4 });
      expect((await read(pet.id, { 'if-none-match': '"0"' })).status).to.equal(200);
      expect((await read(pet.id, { 'if-match': '"0"' })).status).to.equal(412);
      expectError(await read(pet.id, { 'if-none-match': 'unquoted' }), 400, 'invalid_request', 'If-None-Match');
    });

    it('deletes a pet: 204, then 404 on every route; PATCH and DELETE carry no deprecation', async () => {
      const pet = await created();
      const deleted = await remove(pet.id);
      expect([deleted.status, deleted.text]).to.deep.equal([204, '']);
      expect(deleted.headers.get('deprecation')).to.equal(null);
      expect(deleted.headers.get('x-ratelimit-remaining')).to.not.equal(null);
      expectError(await read(pet.id), 404, 'not_found');
      expectError(await patch(pet.id, { name: 'Max' }), 404, 'not_found');
      expectError(await remove(pet.id), 404, 'not_found');
      const list = await call('get', '/v1/pets', { headers: AUTH });
      expect(list.body).to.deep.equal([]);
    });

    it('refuses every invalid part of a patch at once, naming each, and changes nothing', async () => {
      const pet = await created();
      const all = await patch(pet.id, { id: 5, name: '', categoryId: 0, status: 'lost', color: 'red' }, { 'if-match': 'nope', 'idempotency-key': ' ' });
      expectError(all, 400, 'invalid_request');
      expect((all.body as { message: string }).message).to.equal(
        'name: must be 1 to 100 characters; categoryId: must be a positive int64; status: must be one of available, pending, sold; ' +
          'id: is read-only: the path names the pet; color: is not a known field; Idempotency-Key: must be 1 to 255 visible ASCII characters; ' +
          'If-Match: must be * or a comma-separated list of quoted entity tags',
      );
      expectError(await patch(pet.id, {}), 400, 'invalid_request', 'body');
      expect((await patch(pet.id, { name: null, status: null })).body).to.deep.include({
        message: 'name: cannot be removed: a pet always has one; status: cannot be removed: a pet always has one',
      });
      expectError(await patch(pet.id, '[]'), 400, 'invalid_request', 'body');
      expectError(await patch('05', { name: 'Max' }), 400, 'invalid_request', 'petId');
      expectError(await patch(pet.id, { name: 'Max' }, { 'if-none-match': '*' }), 400, 'invalid_request', 'If-None-Match');
      expectError(await remove(pet.id, { 'if-none-match': '*' }), 400, 'invalid_request', 'If-None-Match');
      expect((await read(pet.id)).body).to.deep.equal({ id: Number(pet.id), name: 'Rex', categoryId: 3, status: 'available' });
    });

    it('takes application/merge-patch+json and application/json, and answers other types 415 with Accept-Patch', async () => {
      const pet = await created();
      expect((await patch(pet.id, { name: 'A' }, { 'content-type': 'application/json' })).status).to.equal(200);
      expect((await patch(pet.id, { name: 'B' }, { 'content-type': 'application/merge-patch+json; charset=utf-8' })).status).to.equal(200);
      const refused = await patch(pet.id, { name: 'C' }, { 'content-type': 'application/json-patch+json' });
      expectError(refused, 415, 'unsupported_media_type', 'body');
      expect(refused.headers.get('accept-patch')).to.equal('application/merge-patch+json, application/json');
    });

    it('answers a retried change with its first outcome (Idempotency-Key), scoped to the pet, and 409 conflict for another change', async () => {
      const pet = await created();
      const other = await created();
      const key = { 'idempotency-key': 'sale-1' };
      const first = await patch(pet.id, { status: 'sold' }, key);
      expect([first.status, first.headers.get('idempotent-replayed')]).to.deep.equal([200, null]);
      const retry = await patch(pet.id, { status: 'sold' }, key);
      expect([retry.status, retry.headers.get('idempotent-replayed'), retry.headers.get('etag'), retry.text]).to.deep.equal([
        200,
        'true',
        first.headers.get('etag'),
        first.text,
      ]);
      expectError(await patch(pet.id, { status: 'pending' }, key), 409, 'conflict', 'Idempotency-Key');
      const elsewhere = await patch(other.id, { status: 'sold' }, key);
      expect([elsewhere.status, elsewhere.headers.get('idempotent-replayed')]).to.deep.equal([200, null]);
      expectError(await patch(pet.id, { status: 'sold' }), 409, 'invalid_transition');
    });
  });

  describe('routing', () => {
    async function raw(method: string, path: string): Promise<{ status: number; headers: Headers; body: unknown }> {
      const response = await fetchWithinContract(stack.baseUrl + path, { method, headers: AUTH });
      expect(response.headers.get('content-type')).to.match(/^application\/json/);
      return { status: response.status, headers: response.headers, body: await response.json() };
    }

    it('gives 405 with Allow for another method on a known path', async () => {
      for (const [method, path, allow] of [
        ['DELETE', '/v1/pets', 'GET, HEAD, POST'],
        ['PUT', '/v1/pets', 'GET, HEAD, POST'],
        ['POST', '/v1/pets/1', 'GET, HEAD, PATCH, DELETE'],
        ['PUT', '/v1/pets/1', 'GET, HEAD, PATCH, DELETE'],
      ] as const) {
        const reply = await raw(method, path);
        expect(reply.status).to.equal(405);
        expect(reply.body).to.deep.include({ code: 'method_not_allowed', status: 405 });
        expect(reply.headers.get('allow')).to.equal(allow);
      }
    });

    it('gives 404 with the Error body for an unknown path', async () => {
      for (const path of ['/v1/cats', '/v1/pets/1/owner', '/', '/v2/pets']) {
        const reply = await raw('GET', path);
        expect(reply.status).to.equal(404);
        expect(reply.body).to.deep.equal({ code: 'not_found', message: 'no such resource', status: 404 });
      }
    });

    it('answers a malformed request line with a JSON 400', async () => {
      const port = Number(new URL(stack.baseUrl).port);
      const reply = await new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => socket.write('GARBAGE\r\n\r\n'));
        let data = '';
        socket.on('data', (chunk: Buffer) => (data += chunk.toString()));
        socket.on('end', () => resolve(data));
        socket.on('error', reject);
      });
      expect(reply).to.match(/^HTTP\/1\.1 400/);
      expect(reply).to.include('"code":"invalid_request"');
    });

    it('answers oversized headers with a JSON 431', async () => {
      const status = await new Promise<number>((resolve, reject) => {
        const request = httpRequest(`${stack.baseUrl}/v1/pets`, { headers: { ...AUTH, 'x-big': 'a'.repeat(20_000) } }, (response) => {
          response.resume();
          resolve(response.statusCode!);
        });
        request.on('error', reject);
        request.end();
      });
      expect(status).to.equal(431);
    });
  });
}

describe('gateway with int64 ids beyond 2^53', () => {
  it('emits ids exactly, in bodies, Location and GET paths', async () => {
    const stack = await startTestStack({ repository: new MemoryPetRepository({ lastId: 9223372036854775806n }) });
    try {
      const created = await fetch(`${stack.baseUrl}/v1/pets`, {
        method: 'POST',
        headers: JSON_AUTH,
        body: '{"name":"Edge","categoryId":9007199254740993}',
      });
      const text = await created.text();
      expect(text).to.equal(`{"id":${INT64_MAX},"name":"Edge","categoryId":9007199254740993,"status":"available"}`);
      expect(created.headers.get('location')).to.equal(`/v1/pets/${INT64_MAX}`);
      const fetched = await fetch(`${stack.baseUrl}/v1/pets/${INT64_MAX}`, { headers: AUTH });
      expect(await fetched.text()).to.equal(text);
    } finally {
      await stack.close();
    }
  });
});

describe('gateway when the pet service is down', () => {
  it('answers 503 service_unavailable with the Error body', async () => {
    const stack = await startTestStack({ petClientTimeoutMs: 1000 });
    try {
      await stack.petService.shutdown();
      const response = await fetch(`${stack.baseUrl}/v1/pets`, { headers: AUTH });
      const text = await response.text();
      expect(response.status, text).to.equal(503);
      expectMatchesContract('get', '/pets', { status: response.status, headers: response.headers, text });
      expect(JSON.parse(text)).to.deep.equal({ code: 'service_unavailable', message: 'pet service unavailable', status: 503 });
    } finally {
      await stack.close();
    }
  });
});
