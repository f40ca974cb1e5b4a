import { brotliCompressSync, deflateSync, gzipSync, zstdCompressSync } from 'node:zlib';
import { Metadata, type ServiceError } from '@grpc/grpc-js';
import { callMetadata, createPetServiceClient, fieldViolationsOf, IDEMPOTENCY_KEY_METADATA, type PromisePetServiceClient } from '@petstore/proto';
import { expect } from 'chai';
import { sendRaw } from './support/raw-http';
import { startTestStack, TEST_KEYS, type TestStack } from './support/test-stack';

/**
 * Issue 27, findings 5 and 6: one rule, one message, whether it is broken over HTTP or over gRPC;
 * the message of a 400 names the field and says what is wrong with it; one rule for integers in
 * the URL.
 */
describe('one message per rule, over HTTP and gRPC (issue 27)', () => {
  let stack: TestStack;
  let grpc: PromisePetServiceClient;

  before(async () => {
    stack = await startTestStack();
    grpc = createPetServiceClient(`127.0.0.1:${stack.petService.port}`);
  });

  after(async () => {
    grpc.close();
    await stack.close();
  });

  async function http(body: Buffer | string, headers: Record<string, string> = {}): Promise<{ status: number; message: string }> {
    const all = new Headers(headers);
    all.set('authorization', `Bearer ${TEST_KEYS.enterprise}`);
    if (!all.has('content-type')) all.set('content-type', 'application/json');
    const response = await fetch(`${stack.baseUrl}/v1/pets`, { method: 'POST', headers: all, body });
    return { status: response.status, message: ((await response.json()) as { message: string }).message };
  }

  /** The details of the INVALID_ARGUMENT a CreatePet gets. */
  async function grpcCreate(name: string, metadata: Metadata = new Metadata()): Promise<string> {
    const error = await grpc.createPet({ name, categoryId: '1', status: 0 }, metadata).then(
      () => expect.fail('created'),
      (failure: unknown) => failure as ServiceError,
    );
    return error.details;
  }

  it('a name out of bounds', async () => {
    for (const name of ['', 'x'.repeat(101)]) {
      expect(await http(JSON.stringify({ name, categoryId: 1 }))).to.deep.equal({ status: 400, message: 'name: must be 1 to 100 characters' });
      expect(await grpcCreate(name)).to.equal('name: must be 1 to 100 characters');
    }
  });

  it('every invalid field at once, in one stable order, over HTTP and gRPC alike (issue 40)', async () => {
    expect(await http(JSON.stringify({ name: '', categoryId: 0 }))).to.deep.equal({
      status: 400,
      message: 'name: must be 1 to 100 characters; categoryId: must be a positive int64',
    });
    expect(await http(JSON.stringify({ name: '', categoryId: 0 }), { 'idempotency-key': 'has space' })).to.deep.equal({
      status: 400,
      message: 'name: must be 1 to 100 characters; categoryId: must be a positive int64; Idempotency-Key: must be 1 to 255 visible ASCII characters',
    });
    const error = await grpc.createPet({ name: '', categoryId: '0', status: 0 }).then(
      () => expect.fail('created'),
      (failure: unknown) => failure as ServiceError,
    );
    expect(error.details).to.equal('name: must be 1 to 100 characters; category_id: must be a positive int64');
    expect(fieldViolationsOf(error.metadata).map((violation) => violation.field)).to.deep.equal(['name', 'category_id']);
    const listed = await fetch(`${stack.baseUrl}/v1/pets?limit=0&status=bogus&cursor=%21`, { headers: { authorization: `Bearer ${TEST_KEYS.enterprise}` } });
    expect(listed.status).to.equal(400);
    expect(((await listed.json()) as { message: string }).message).to.match(/^limit: .+; status: .+; cursor: .+$/);
  });

  it('two Idempotency-Key values', async () => {
    // Two fields, as sent: fetch would join them into one.
    const body = '{"name":"n","categoryId":1}';
    const head = ['POST /v1/pets HTTP/1.1', 'Host: edge', `Authorization: Bearer ${TEST_KEYS.enterprise}`, 'Content-Type: application/json', 'Idempotency-Key: a', 'Idempotency-Key: b', 'Connection: close', `Content-Length: ${body.length}`];
    const reply = await sendRaw(Number(new URL(stack.baseUrl).port), Buffer.from(`${head.join('\r\n')}\r\n\r\n${body}`));
    expect({ status: reply.status, message: (JSON.parse(reply.body.toString()) as { message: string }).message }).to.deep.equal({ status: 400, message: 'Idempotency-Key: must be one value' });
    const metadata = callMetadata({ requestId: 'r' });
    metadata.add(IDEMPOTENCY_KEY_METADATA, 'a');
    metadata.add(IDEMPOTENCY_KEY_METADATA, 'b');
    expect(await grpcCreate('n', metadata)).to.equal(`${IDEMPOTENCY_KEY_METADATA}: must be one value`);
  });

  const CODINGS = { gzip: gzipSync, deflate: deflateSync, br: brotliCompressSync, zstd: zstdCompressSync } as const;

  it('a body its Content-Encoding does not decode names the body, for each coding served (zstd too: issue 45)', async () => {
    for (const [encoding, encode] of Object.entries(CODINGS)) {
      // Not coded at all; cut short; followed by bytes past the end of the coded data. (Random
      // bytes would not do: some 4 % of them make a valid, empty br stream.)
      const coded = encode('{"name":"n","categoryId":1}');
      for (const body of ['{"name":"n","categoryId":1}', coded.subarray(0, coded.length - 2), Buffer.concat([coded, Buffer.from('{}')])]) {
        expect(await http(body, { 'content-encoding': encoding }), encoding).to.deep.equal({
          status: 400,
          message: 'body: does not decode as its Content-Encoding says',
        });
      }
    }
  });

  it('each coding served decodes, within the 64 KiB limit counted on the decoded bytes; any other coding is 415', async () => {
    for (const [encoding, encode] of Object.entries(CODINGS)) {
      expect((await http(encode('{"name":"n","categoryId":1}'), { 'content-encoding': encoding })).status, encoding).to.equal(201);
      // 1 MiB of spaces around the object: a few hundred bytes on the wire.
      const inflated = encode(`${' '.repeat(1 << 20)}{"name":"n","categoryId":1}`);
      expect(inflated.length, encoding).to.be.below(64 * 1024);
      expect(await http(inflated, { 'content-encoding': encoding }), encoding).to.deep.equal({ status: 413, message: 'body: larger than 64 KiB' });
    }
    expect(await http('{"name":"n","categoryId":1}', { 'content-encoding': 'compress' })).to.deep.equal({
      status: 415,
      message: 'body: unsupported Content-Encoding',
    });
  });

  it('a repeated member name is refused as such, not as "not valid JSON"', async () => {
    expect(await http('{"name":"a","name":"b","categoryId":1}')).to.deep.equal({
      status: 400,
      message: 'body: repeats a member name within one object: send each once',
    });
  });

  it('limit with a leading zero is refused, as petId is, and the message says it is the leading zero', async () => {
    const headers = { authorization: `Bearer ${TEST_KEYS.enterprise}` };
    for (const [path, field] of [['/v1/pets?limit=05', 'limit'], ['/v1/pets/05', 'petId']] as const) {
      const response = await fetch(`${stack.baseUrl}${path}`, { headers });
      expect(response.status, path).to.equal(400);
      expect(((await response.json()) as { message: string }).message, path).to.equal(`${field}: must be written without a leading zero`);
    }
  });

  it('Bearer and a tab before the key is a malformed credential, not a missing one', async () => {
    const head = ['GET /v1/pets HTTP/1.1', 'Host: edge', `Authorization: Bearer\t${TEST_KEYS.enterprise}`, 'Connection: close'];
    const reply = await sendRaw(Number(new URL(stack.baseUrl).port), Buffer.from(`${head.join('\r\n')}\r\n\r\n`));
    expect(reply.status).to.equal(401);
    expect((JSON.parse(reply.body.toString()) as { message: string }).message).to.equal('malformed bearer API key');
  });
});
