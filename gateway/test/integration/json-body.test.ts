import { once } from 'node:events';
import { createServer, type IncomingMessage, request as httpRequest, type Server } from 'node:http';
import { connect } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync, zstdCompressSync } from 'node:zlib';
import { expect } from 'chai';
import { ApiError } from '../../src/http/api-error';
import { readJsonBody } from '../../src/http/json-body';

const CODINGS = { gzip: gzipSync, deflate: deflateSync, br: brotliCompressSync, zstd: zstdCompressSync } as const;
const PET = '{"name":"n","categoryId":1}';

/** What readJsonBody made of a request: its value, or the ApiError it threw. */
type Outcome = { value: unknown } | { status: number; message: string };

/**
 * readJsonBody on a real HTTP server: coded bodies decode whole or not at all, and a request that
 * ends early settles the read instead of leaving it waiting.
 */
describe('readJsonBody: coded bodies (issue 45)', () => {
  let server: Server;
  let port: number;
  let outcomes: Array<Promise<Outcome>>;

  before(async () => {
    server = createServer((request, response) => {
      const outcome = read(request);
      outcomes.push(outcome);
      void outcome.then((settled) => response.writeHead('value' in settled ? 200 : settled.status).end());
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as { port: number }).port;
  });

  beforeEach(() => {
    outcomes = [];
  });

  after(() => server.close());

  async function read(request: IncomingMessage): Promise<Outcome> {
    try {
      return { value: await readJsonBody(request) };
    } catch (error) {
      expect(error).to.be.instanceOf(ApiError);
      return { status: (error as ApiError).status, message: (error as ApiError).message };
    }
  }

  /** Sends `body` with `coding`, in `chunks` of the given sizes (chunked) or at once (Content-Length). */
  async function send(coding: string, body: Buffer, chunks?: number[]): Promise<Outcome> {
    const headers: Record<string, string> = { 'content-type': 'application/json', 'content-encoding': coding };
    if (chunks === undefined) headers['content-length'] = String(body.length);
    const sent = httpRequest({ port, host: '127.0.0.1', method: 'POST', headers });
    let offset = 0;
    for (const size of chunks ?? [body.length]) {
      sent.write(body.subarray(offset, offset + size));
      offset += size;
    }
    sent.end(body.subarray(offset));
    const [response] = (await once(sent, 'response')) as [IncomingMessage];
    response.resume();
    return outcomes.at(-1)!;
  }

  it('decodes each coding served, whole, sent at once or in chunks', async () => {
    for (const [coding, encode] of Object.entries(CODINGS)) {
      const coded = encode(PET);
      for (const chunks of [undefined, [1, 2, 3]]) {
        expect(await send(coding, coded, chunks), coding).to.deep.equal({ value: { name: 'n', categoryId: 1 } });
      }
    }
  });

  it('refuses bytes after the end of the coded data, which decoders other than gzip would drop unseen', async () => {
    for (const [coding, encode] of Object.entries(CODINGS)) {
      for (const chunks of [undefined, [4]]) {
        expect(await send(coding, Buffer.concat([encode(PET), Buffer.from('{"name":"m"}')]), chunks), coding).to.deep.equal({
          status: 400,
          message: 'body: does not decode as its Content-Encoding says',
        });
      }
    }
  });

  it('accepts gzip members one after another, as RFC 1952 allows', async () => {
    const members = Buffer.concat([gzipSync('{"name":"n",'), gzipSync('"categoryId":1}')]);
    expect(await send('gzip', members, [5])).to.deep.equal({ value: { name: 'n', categoryId: 1 } });
  });

  it('refuses a coded body over 64 KiB on the wire, sent chunked with no length to refuse it by', async () => {
    const coded = Buffer.concat([brotliCompressSync(PET), Buffer.alloc(65 * 1024)]);
    expect(await send('br', coded, [1024])).to.deep.equal({ status: 413, message: 'body: larger than 64 KiB' });
  });

  it('settles the read of a coded body whose client goes away mid-body', async () => {
    const socket = connect(port, '127.0.0.1');
    await once(socket, 'connect');
    const coded = gzipSync(PET);
    const head = 'POST / HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n';
    socket.write(`${head}${(8).toString(16)}\r\n`);
    socket.write(coded.subarray(0, 8));
    socket.write('\r\n');
    while (outcomes.length === 0) await once(server, 'request');
    socket.destroy();
    expect(await outcomes[0]).to.deep.equal({ status: 400, message: 'body: request aborted' });
  });
});
