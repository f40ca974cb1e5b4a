import { expect } from 'chai';
import { sendRaw, type RawReply } from './support/raw-http';
import { TEST_KEYS, useStackMinuteByMinute } from './support/test-stack';

const MINUTE_START = Date.UTC(2030, 0, 1, 12, 30);

/**
 * Issue 17, findings 3 to 8: requests an outside run and a hostile-input probe sent, each over a
 * real socket to a real gateway and pet service. Every refusal must be the JSON Error body.
 */
describe('gateway under hostile requests (issue 17)', () => {
  const port = useStackMinuteByMinute(MINUTE_START);

  /** One request, `Connection: close`; `head` lines go in as given (Host included, or not). */
  function send(requestLine: string, head: readonly string[], body: Buffer | string = ''): Promise<RawReply> {
    const payload = typeof body === 'string' ? Buffer.from(body, 'latin1') : body;
    const lines = [requestLine, ...head, 'Connection: close'];
    if (payload.length > 0) lines.push(`Content-Length: ${payload.length}`);
    return sendRaw(port(), Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), payload]));
  }

  const postPet = (body: Buffer | string, head: readonly string[] = [`Authorization: Bearer ${TEST_KEYS.free}`, 'Content-Type: application/json']) =>
    send('POST /v1/pets HTTP/1.1', ['Host: edge', ...head], body);

  function expectError(reply: RawReply, status: number, code: string, message: string | RegExp): void {
    expect(reply.status, reply.body.toString()).to.equal(status);
    expect(reply.headers['content-type']).to.equal('application/json; charset=utf-8');
    const error = JSON.parse(reply.body.toString('utf8')) as { code: string; message: string; status: number };
    expect(error.code).to.equal(code);
    expect(error.status).to.equal(status);
    if (typeof message === 'string') expect(error.message).to.equal(message);
    else expect(error.message).to.match(message);
  }

  async function petCount(): Promise<number> {
    const reply = await send('GET /v1/pets?limit=100 HTTP/1.1', ['Host: edge', `Authorization: Bearer ${TEST_KEYS.enterprise}`]);
    return (JSON.parse(reply.body.toString()) as unknown[]).length;
  }

  describe('finding 3: what Node answered with an empty body', () => {
    it('answers an Expect other than 100-continue with 417 and the Error body', async () => {
      for (const expectation of ['foo', '200-ok', 'x=1']) {
        expectError(await postPet('{"name":"a","categoryId":1}', [`Expect: ${expectation}`]), 417, 'invalid_request', 'Expect: only 100-continue is supported');
      }
    });

    it('still honours Expect: 100-continue', async () => {
      const reply = await postPet('{"name":"expect","categoryId":1}', [
        `Authorization: Bearer ${TEST_KEYS.free}`,
        'Content-Type: application/json',
        'Expect: 100-continue',
      ]);
      expect(reply.status).to.equal(201);
    });

    it('answers an HTTP/1.1 request without Host with 400 and the Error body', async () => {
      expectError(await send('GET /v1/pets HTTP/1.1', [`Authorization: Bearer ${TEST_KEYS.free}`]), 400, 'invalid_request', 'Host: is required in an HTTP/1.1 request');
    });

    it('serves an HTTP/1.0 request without Host, which needs none', async () => {
      const reply = await send('GET /v1/openapi.json HTTP/1.0', []);
      expect(reply.status).to.equal(200);
    });

    it('answers two Host fields with 400 (RFC 9112 section 3.2), the same or not', async () => {
      for (const hosts of [['Host: a', 'Host: b'], ['Host: a', 'host: a']]) {
        expectError(
          await send('GET /v1/openapi.json HTTP/1.1', hosts),
          400,
          'invalid_request',
          'Host: must be given once',
        );
      }
    });
  });

  describe('finding 4: a JSON request without a body', () => {
    it('gives 400 naming the missing body, not 415', async () => {
      for (const head of [
        [`Authorization: Bearer ${TEST_KEYS.free}`, 'Content-Type: application/json'],
        [`Authorization: Bearer ${TEST_KEYS.free}`, 'Content-Type: application/json', 'Content-Length: 0'],
        [`Authorization: Bearer ${TEST_KEYS.free}`],
      ]) {
        expectError(await postPet('', head), 400, 'invalid_request', 'body: is required: send a JSON object');
      }
    });

    it('still gives 415 for a body of another type, or JSON in another charset', async () => {
      for (const type of ['text/plain', 'application/json; charset=latin1', 'application/json; charset=utf-16']) {
        expectError(
          await postPet('{"name":"a","categoryId":1}', [`Authorization: Bearer ${TEST_KEYS.free}`, `Content-Type: ${type}`]),
          415,
          'unsupported_media_type',
          /^body: /,
        );
      }
    });
  });

  describe('finding 5: two Authorization fields', () => {
    const freeRemaining = async () =>
      (await send('GET /v1/pets HTTP/1.1', ['Host: edge', `Authorization: Bearer ${TEST_KEYS.free}`])).headers['x-ratelimit-remaining'];

    for (const [what, first, second] of [
      ['valid then bogus', TEST_KEYS.free, 'bogus'],
      ['bogus then valid', 'bogus', TEST_KEYS.free],
      ['a free key then an enterprise key', TEST_KEYS.free, TEST_KEYS.enterprise],
    ]) {
      it(`refuses ${what} with 400, charged to the address, not to either key`, async () => {
        const before = Number(await freeRemaining());
        const reply = await send('GET /v1/pets HTTP/1.1', ['Host: edge', `Authorization: Bearer ${first}`, `Authorization: Bearer ${second}`]);
        expectError(reply, 400, 'invalid_request', 'Authorization: must be given once');
        expect(reply.headers['ratelimit-policy']).to.equal('"ip-minute";q=60;w=60');
        expect(reply.headers.ratelimit).to.match(/^"ip-minute";r=59;t=\d+$/);
        expect(Number(await freeRemaining()), 'the free key was charged only for the two checks').to.equal(before - 1);
      });
    }
  });

  describe('findings 6 and 7: text and numbers that were stored changed', () => {
    const utf8 = (text: string) => Buffer.from(text, 'utf8');

    for (const [what, bytes] of [
      ['a lone continuation byte', [0x80]],
      ['0xFF', [0xff]],
      ['an overlong /', [0xc0, 0xaf]],
      ['an encoded surrogate (CESU-8)', [0xed, 0xa0, 0x80]],
      ['a truncated sequence', [0xe2, 0x82]],
    ] as const) {
      it(`refuses a body with ${what} (invalid UTF-8) with 400, storing nothing`, async () => {
        const count = await petCount();
        const body = Buffer.concat([utf8('{"name":"a'), Buffer.from(bytes), utf8('","categoryId":1}')]);
        expectError(await postPet(body), 400, 'invalid_request', 'body: is not valid UTF-8');
        expect(await petCount()).to.equal(count);
      });
    }

    it('refuses a name escaping an unpaired surrogate with 400, storing nothing', async () => {
      const count = await petCount();
      for (const name of ['\\ud800', 'a\\udc00b', '\\ud83d\\u0041']) {
        expectError(await postPet(`{"name":"${name}","categoryId":1}`), 400, 'invalid_request', /^body: escapes an unpaired UTF-16 surrogate/);
      }
      expect(await petCount()).to.equal(count);
    });

    it('stores a surrogate pair, escaped or not, as its one character', async () => {
      const reply = await postPet(utf8('{"name":"\\ud83d\\udc36 🐶","categoryId":1}'));
      expect(reply.status).to.equal(201);
      expect((JSON.parse(reply.body.toString('utf8')) as { name: string }).name).to.equal('🐶 🐶');
    });

    it('refuses a name with a NUL or another control character with 400 naming name', async () => {
      for (const name of ['a\\u0000b', '\\u001b[2J', 'a\\u007f', utf8('a\u0085').toString('latin1')]) {
        expectError(
          await postPet(`{"name":"${name}","categoryId":1}`),
          400,
          'invalid_request',
          'name: must not contain control characters (U+0000 to U+001F, U+007F to U+009F)',
        );
      }
    });

    it('reads every integer-valued categoryId within int64 exactly, however it is written', async () => {
      for (const [literal, stored] of [
        ['1.0', '1'],
        ['1E2', '100'],
        ['1e18', '1000000000000000000'],
        ['9.2e18', '9200000000000000000'],
        ['92233720368547758.07e2', '9223372036854775807'],
      ]) {
        const reply = await postPet(`{"name":"n","categoryId":${literal}}`);
        expect(reply.status, literal).to.equal(201);
        expect(reply.body.toString(), literal).to.include(`"categoryId":${stored},`);
      }
    });

    it('refuses a categoryId that is not an integer, or beyond int64, however it is written', async () => {
      for (const literal of ['1.5', '1e-1', '9.3e18', '1e19', '1.0000000000000000001', '1e400', '0.0', '-1e2']) {
        expectError(await postPet(`{"name":"n","categoryId":${literal}}`), 400, 'invalid_request', 'categoryId: must be a positive int64');
      }
    });
  });

  describe('finding 8: deep nesting', () => {
    it('refuses JSON nested 32,000 deep, within 64 KiB, with its own 400', async () => {
      const body = `{"name":"a","categoryId":1,"x":${'['.repeat(32_000)}${']'.repeat(32_000)}}`;
      expect(body.length).to.be.below(64 * 1024);
      expectError(await postPet(body), 400, 'invalid_request', 'body: nested more than 64 levels deep');
    });

    it('parses nesting up to 64 deep, and then judges the body by its schema', async () => {
      const body = `{"name":"a","categoryId":1,"x":${'['.repeat(63)}${']'.repeat(63)}}`;
      expectError(await postPet(body), 400, 'invalid_request', 'x: is not a known field');
    });
  });
});
