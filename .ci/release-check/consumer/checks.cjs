'use strict';
/**
 * What a consumer of the published packages does, run once through `import` (consumer.mjs) and
 * once through `require` (consumer.cjs) on the modules each loaded: list, create with the largest
 * int64, page through 250 pets, meet a 429, and call the pet service over gRPC. Throws at the
 * first broken promise of the READMEs.
 */
const assert = require('node:assert/strict');
const { randomUUID } = require('node:crypto');
const { existsSync } = require('node:fs');
const { join } = require('node:path');
// The Metadata class calls take: @petstore/proto's dependency, as a customer's program has it.
const { Metadata } = require('@grpc/grpc-js');

const INT64_MAX = '9223372036854775807';
const PETS = 250;

async function checkHttpClient({ createPetstoreClient, PetstoreError }, env) {
  const apiKey = env.PETSTORE_KEY;
  const client = createPetstoreClient({ baseUrl: env.PETSTORE_URL, apiKey });

  const before = [];
  for await (const pet of client.listPets()) before.push(pet);
  assert.deepEqual(before, [], 'a new store lists no pet');

  const exact = await client.createPet({ name: 'Rex', categoryId: BigInt(INT64_MAX) });
  assert.equal(typeof exact.id, 'bigint');
  assert.equal(exact.categoryId, BigInt(INT64_MAX), 'categoryId kept exact as a bigint');
  assert.equal(exact.status, 'available');

  const asText = createPetstoreClient({ baseUrl: env.PETSTORE_URL, apiKey, int64: 'string' });
  const text = await asText.createPet({ name: 'Rex as text', categoryId: INT64_MAX, status: 'pending' });
  assert.equal(text.categoryId, INT64_MAX, 'categoryId kept exact as a string');
  assert.equal(typeof text.id, 'string');

  for (let index = 2; index < PETS; index += 1) await client.createPet({ name: `pet ${index}`, categoryId: index });
  const pages = [];
  const counting = createPetstoreClient({
    baseUrl: env.PETSTORE_URL,
    apiKey,
    fetch: (input, init) => {
      pages.push(String(input));
      return fetch(input, init);
    },
  });
  const all = [];
  for await (const pet of counting.listPets({ limit: 100 })) all.push(pet);
  assert.equal(all.length, PETS, 'every pet, page after page');
  assert.equal(new Set(all.map((pet) => pet.id)).size, PETS, 'no pet twice');
  assert.equal(pages.length, 3, 'three pages of at most 100');
  assert.equal(all.find((pet) => pet.id === exact.id).categoryId, BigInt(INT64_MAX));
  const pending = [];
  for await (const pet of client.listPets({ status: 'pending' })) pending.push(pet);
  assert.deepEqual(pending.map((pet) => pet.name), ['Rex as text']);

  // A key allowed one request a minute: the second gets a 429, which the client retries after
  // Retry-After; with no retry budget it reports it instead, with the wait it was told.
  const limited = createPetstoreClient({ baseUrl: env.PETSTORE_URL, apiKey: env.PETSTORE_LIMITED_KEY, retry: { budgetMs: 0 } });
  await limited.createPet({ name: 'first', categoryId: 1n });
  assert.equal(limited.rateLimit.remaining, 0);
  const refused = await limited.createPet({ name: 'second', categoryId: 1n }).then(
    () => assert.fail('the second request of the minute was served'),
    (error) => error,
  );
  assert.ok(refused instanceof PetstoreError, `a PetstoreError, not ${refused}`);
  assert.equal(refused.code, 'rate_limited');
  assert.equal(refused.status, 429);
  assert.ok(refused.retryAfterMs > 0, 'Retry-After read');
  assert.ok(refused.requestId, 'the request id the gateway logged');

  const invalid = await client.createPet({ name: '', categoryId: 1n }).then(
    () => assert.fail('an empty name was accepted'),
    (error) => error,
  );
  assert.ok(invalid instanceof PetstoreError);
  assert.equal(invalid.code, 'invalid_request');
  await assert.rejects(client.createPet({ name: 'rounded', categoryId: 2 ** 63 }), RangeError);
}

async function checkGrpcClient(proto, env) {
  const { callMetadata, createPetServiceClient, createUnaryTransport, fieldViolationOf, GetPetRequest, GetPetResponse, PetServiceService, PetStatus, PET_SERVICE_PROTO, PROTO_ROOT } = proto;
  assert.ok(existsSync(join(PROTO_ROOT, PET_SERVICE_PROTO)), 'the .proto file ships with the package');
  const pets = createPetServiceClient(env.PET_SERVICE_TARGET, { callerId: 'svc:release-check' });
  try {
    const idempotencyKey = randomUUID();
    const request = { name: 'Rex over gRPC', categoryId: INT64_MAX, status: PetStatus.PET_STATUS_SOLD };
    const created = await pets.createPet(request, callMetadata({ idempotencyKey }));
    assert.equal(created.pet.categoryId, INT64_MAX, 'int64 as a decimal string, exact');
    assert.equal(created.pet.status, PetStatus.PET_STATUS_SOLD);
    assert.equal(created.replayed, false);
    const again = await pets.createPet(request, callMetadata({ idempotencyKey }));
    assert.equal(again.replayed, true);
    assert.equal(again.pet.id, created.pet.id);
    const sold = await pets.listPets({ pageSize: 100, pageToken: '', status: PetStatus.PET_STATUS_SOLD });
    assert.deepEqual(sold.pets.map((pet) => pet.id), [created.pet.id]);
    const invalid = await pets.createPet({ ...request, categoryId: '0' }).then(
      () => assert.fail('categoryId 0 was accepted'),
      (error) => error,
    );
    assert.equal(invalid.code, 3, 'INVALID_ARGUMENT');
    assert.equal(fieldViolationOf(invalid.metadata)?.field, 'category_id');
    assert.equal(pets.transport.state(), 'READY');
    assert.ok(pets.transport.connections().ready >= 1, 'a ready connection');

    // The transport alone, for any unary method: the response's bytes.
    const transport = createUnaryTransport(env.PET_SERVICE_TARGET);
    try {
      const bytes = await transport.call(PetServiceService.getPet.path, GetPetRequest.encode({ id: created.pet.id }).finish(), new Metadata(), { deadline: Date.now() + 2000 });
      assert.equal(GetPetResponse.decode(bytes).pet.name, 'Rex over gRPC');
    } finally {
      transport.close();
    }
  } finally {
    pets.close();
  }
}

/** Runs every check against the gateway and pet service the environment names. */
async function runChecks(client, proto, env) {
  await checkHttpClient(client, env);
  await checkGrpcClient(proto, env);
}

module.exports = { runChecks };
