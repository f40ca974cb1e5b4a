import { expect } from 'chai';
import { sendRawPipelined, type RawReply } from './support/raw-http';
import { TEST_KEYS, useStackMinuteByMinute } from './support/test-stack';

const MINUTE_START = Date.UTC(2030, 0, 1, 12, 30);
const KEY = `Authorization: Bearer ${TEST_KEYS.enterprise}`;

/**
 * Issue 27, findings 1 to 3, over a real socket: every request the gateway has started to serve
 * gets its whole response, in order, before the refusal of what followed it on the connection
 * (RFC 9112 section 9.3.2), and every refusal is a whole response: status, `Date`, the Error body
 * in `application/json; charset=utf-8`.
 */
describe('pipelined requests with a refusal behind a completed one (issue 27)', () => {
  const port = useStackMinuteByMinute(MINUTE_START);

  const request = (lines: readonly string[], body = ''): string => `${lines.join('\r\n')}\r\n\r\n${body}`;
  const pet = '{"name":"pipelined","categoryId":1}';

  const FIRST = {
    GET: { bytes: request(['GET /v1/pets?limit=1 HTTP/1.1', 'Host: edge', KEY]), status: 200 },
    POST: {
      bytes: request(['POST /v1/pets HTTP/1.1', 'Host: edge', KEY, 'Content-Type: application/json', `Content-Length: ${pet.length}`], pet),
      status: 201,
    },
  } as const;

  /** What follows the first request, and the refusal it must get: [what, bytes, status, message, code]. */
  const REFUSALS: readonly (readonly [string, string, number, string, string?])[] = [
    ['bytes that are not HTTP', 'BLAH\r\n\r\n', 400, 'malformed HTTP request'],
    ['a Content-Length that is not a number', request(['POST /v1/pets HTTP/1.1', 'Host: edge', 'Content-Length: abc']), 400, 'malformed HTTP request'],
    ['headers too large', request(['GET /v1/pets HTTP/1.1', 'Host: edge', `X-Big: ${'a'.repeat(20_000)}`]), 431, 'request headers too large'],
    ['an unknown method', request(['FOO /v1/pets HTTP/1.1', 'Host: edge']), 501, 'method not implemented'],
    ['CONNECT', request(['CONNECT edge:443 HTTP/1.1', 'Host: edge:443']), 501, 'CONNECT is not implemented: this is not a proxy'],
    ['HTTP/2.0 over HTTP/1', request(['GET /v1/pets HTTP/2.0', 'Host: edge', KEY]), 505, 'HTTP version not supported: send HTTP/1.1'],
    ['HTTP/3.0', request(['GET /v1/pets HTTP/3.0', 'Host: edge', KEY]), 505, 'HTTP version not supported: send HTTP/1.1'],
    ['HTTP/1.2, which Node cannot parse', request(['GET /v1/pets HTTP/1.2', 'Host: edge', KEY]), 505, 'HTTP version not supported: send HTTP/1.1'],
    ['no Host', request(['GET /v1/pets HTTP/1.1', KEY]), 400, 'Host: is required in an HTTP/1.1 request'],
    ['two Host fields', request(['GET /v1/pets HTTP/1.1', 'Host: edge', 'Host: edge', KEY]), 400, 'Host: must be given once'],
    ['Host: a@b', request(['GET /v1/pets HTTP/1.1', 'Host: a@b', KEY]), 400, 'Host: must be a host and optional port'],
    ['an Expect other than 100-continue', request(['POST /v1/pets HTTP/1.1', 'Host: edge', KEY, 'Expect: foo', 'Content-Type: application/json', `Content-Length: ${pet.length}`], pet), 417, 'Expect: only 100-continue is supported'],
    ['no API key', request(['GET /v1/pets HTTP/1.1', 'Host: edge', 'Connection: close']), 401, 'missing bearer API key', 'unauthorized'],
    ['two Authorization fields', request(['GET /v1/pets HTTP/1.1', 'Host: edge', KEY, KEY, 'Connection: close']), 400, 'Authorization: must be given once'],
    [
      'a malformed chunk in its body',
      request(['POST /v1/pets HTTP/1.1', 'Host: edge', KEY, 'Content-Type: application/json', 'Transfer-Encoding: chunked'], 'zz\r\n'),
      400,
      'malformed HTTP request',
    ],
  ];

  function expectWhole(reply: RawReply): void {
    expect(reply.headers.date, 'Date').to.match(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
    expect(reply.headers['content-type']).to.equal('application/json; charset=utf-8');
  }

  for (const method of ['GET', 'POST'] as const) {
    for (const [what, bytes, status, message, code = 'invalid_request'] of REFUSALS) {
      it(`${method}, then ${what}: the ${method}'s response, then ${status}`, async () => {
        const { replies, rest } = await sendRawPipelined(port(), Buffer.from(FIRST[method].bytes + bytes, 'latin1'));
        expect(replies.map((reply) => reply.status)).to.deep.equal([FIRST[method].status, status]);
        expect(rest.length, 'nothing after the refusal').to.equal(0);
        const [first, refusal] = replies as [RawReply, RawReply];
        expectWhole(first);
        if (method === 'POST') expect((JSON.parse(first.body.toString()) as { name: string }).name).to.equal('pipelined');
        expectWhole(refusal);
        const error = JSON.parse(refusal.body.toString()) as { code: string; message: string; status: number };
        expect(error).to.deep.equal({ code, message, status });
      });
    }
  }
});
