import { constants } from 'node:http2';
import { gzipSync } from 'node:zlib';
import { Metadata, status as Status } from '@grpc/grpc-js';
import { expect } from 'chai';
import { createUnaryTransport, type UnaryTransport, type UnaryTransportOptions } from '../../../transport/unary-transport';
import { encodeGrpcMessage } from '../../../transport/status-mapping';
import { answerOk, grpcFrame, type H2Server, type ReceivedCall, startH2Server } from './support/h2-server';
import { failureOf } from './support/call-failure';

const PATH = '/test.Echo/Call';

describe('createUnaryTransport: one call, read as gRPC’s HTTP/2 protocol says (a server on node:http2 on port 0)', function () {
  this.timeout(20_000);
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function serve(answer: (call: ReceivedCall, index: number) => void): Promise<H2Server> {
    const server = await startH2Server(answer);
    cleanups.push(() => server.close());
    return server;
  }

  function transport(target: string, options: UnaryTransportOptions = {}): UnaryTransport {
    const made = createUnaryTransport(target, { proxy: false, ...options });
    cleanups.push(() => made.close());
    return made;
  }

  const call = (to: UnaryTransport, request: Uint8Array = Buffer.from('ping'), metadata = new Metadata(), deadlineMs = 2000, more: { signal?: AbortSignal; onHeaders?: (headers: Metadata) => void; onTrailers?: (trailers: Metadata) => void } = {}) =>
    to.call(PATH, request, metadata, { deadline: Date.now() + deadlineMs, ...more });

  /** Answers every call with these frames: headers (END_STREAM when there are no trailers), data, trailers. */
  const answering =
    (headers: Record<string, string | number>, data: readonly Buffer[] = [], trailers?: Record<string, string>) =>
    (received: ReceivedCall): void => {
      void received.body.then(() => {
        const { stream } = received;
        if (trailers === undefined && data.length === 0) {
          stream.respond({ ':status': 200, ...headers }, { endStream: true });
          return;
        }
        stream.respond({ ':status': 200, ...headers }, { waitForTrailers: trailers !== undefined });
        if (trailers !== undefined) stream.on('wantTrailers', () => stream.sendTrailers(trailers));
        for (const chunk of data) stream.write(chunk);
        stream.end();
      });
    };

  it('sends the request as a gRPC unary call and answers the response message’s bytes, without the prefix', async () => {
    const server = await serve((received) => answerOk(received, Buffer.from('pong')));
    const metadata = new Metadata();
    metadata.set('x-request-id', 'req-1');
    metadata.set('trace-bin', Buffer.from([0, 1, 2, 255]));
    const answer = await call(transport(server.target), Buffer.from('ping'), metadata);
    expect(answer).to.deep.equal(Buffer.from('pong'));
    const [received] = server.calls;
    expect(await received!.body, 'the request, length-prefixed, uncompressed').to.deep.equal(grpcFrame(Buffer.from('ping')));
    expect(received!.headers).to.include({
      ':method': 'POST',
      ':scheme': 'http',
      ':path': PATH,
      ':authority': server.target,
      'content-type': 'application/grpc',
      te: 'trailers',
      'x-request-id': 'req-1',
      // -bin values travel base64, as gRPC says.
      'trace-bin': Buffer.from([0, 1, 2, 255]).toString('base64'),
    });
    // The time left when the stream started: the deadline less the connection's setup.
    expect(received!.headers['grpc-timeout']).to.match(/^\d{1,4}m$/);
    expect(Number.parseInt(received!.headers['grpc-timeout'] as string, 10)).to.be.within(1, 2000);
  });

  it('fails with the status and metadata of a trailers-only answer, and does not call onHeaders', async () => {
    const server = await serve(answering({ 'content-type': 'application/grpc', 'grpc-status': '5', 'grpc-message': 'no such pet', 'x-extra': 'yes', 'x-bytes-bin': Buffer.from('é').toString('base64') }));
    let headersSeen = 0;
    const error = await failureOf(call(transport(server.target), undefined, undefined, 2000, { onHeaders: () => (headersSeen += 1) }));
    expect(error).to.include({ code: Status.NOT_FOUND, details: 'no such pet', message: '5 NOT_FOUND: no such pet' });
    expect(error.metadata.get('x-extra')).to.deep.equal(['yes']);
    expect(error.metadata.get('x-bytes-bin')).to.deep.equal([Buffer.from('é')]);
    expect(error.metadata.get('grpc-status'), 'the status is not metadata').to.deep.equal([]);
    expect(headersSeen).to.equal(0);
  });

  it('fails with the trailers’ status and metadata, the headers given to onHeaders first', async () => {
    const server = await serve(answering({ 'content-type': 'application/grpc', 'x-initial': 'a' }, [], { 'grpc-status': '9', 'grpc-message': 'not now', 'x-extra': 'yes' }));
    const seen: Metadata[] = [];
    const error = await failureOf(call(transport(server.target), undefined, undefined, 2000, { onHeaders: (headers) => seen.push(headers) }));
    expect(error).to.include({ code: Status.FAILED_PRECONDITION, details: 'not now' });
    expect(error.metadata.getMap()).to.deep.equal({ 'x-extra': 'yes' });
    expect(seen.map((headers) => headers.get('x-initial'))).to.deep.equal([['a']]);
  });

  it('percent-decodes grpc-message: Unicode and control characters round-trip', async () => {
    const special = '\t\ntest with whitespace\r\nand Unicode BMP ☺ and non-BMP 😈\t\n';
    const server = await serve(answering({ 'content-type': 'application/grpc', 'grpc-status': '2', 'grpc-message': encodeGrpcMessage(special) }));
    expect(await failureOf(call(transport(server.target)))).to.include({ code: Status.UNKNOWN, details: special });
  });

  it('maps an HTTP status without grpc-status by gRPC’s table, keeping the headers as metadata', async () => {
    const table: Array<[number, Status]> = [
      [400, Status.INTERNAL],
      [401, Status.UNAUTHENTICATED],
      [403, Status.PERMISSION_DENIED],
      [404, Status.UNIMPLEMENTED],
      [429, Status.UNAVAILABLE],
      [502, Status.UNAVAILABLE],
      [503, Status.UNAVAILABLE],
      [504, Status.UNAVAILABLE],
      [500, Status.UNKNOWN],
      [418, Status.UNKNOWN],
    ];
    let httpStatus = 0;
    const server = await serve((received) => {
      void received.body.then(() => received.stream.respond({ ':status': httpStatus, 'content-type': 'text/html', 'x-proxy': 'edge' }, { endStream: true }));
    });
    const client = transport(server.target);
    for (const [status, code] of table) {
      httpStatus = status;
      const error = await failureOf(call(client));
      expect(Status[error.code], String(status)).to.equal(Status[code]);
      expect(error.details).to.equal(`Received HTTP status code ${status}`);
      expect(error.metadata.get('x-proxy')).to.deep.equal(['edge']);
    }
  });

  it('ends an answer that is not gRPC (another HTTP status, or another content-type) at its headers, by the HTTP status, its body unread', async () => {
    // The body starts with bytes that, read as a length prefix, would be far over the size limit.
    const cases: Array<[number, string | undefined, Status, string]> = [
      [503, 'text/plain', Status.UNAVAILABLE, 'Received HTTP status code 503 with content-type text/plain'],
      [404, 'text/html', Status.UNIMPLEMENTED, 'Received HTTP status code 404 with content-type text/html'],
      [502, 'application/grpc', Status.UNAVAILABLE, 'Received HTTP status code 502'],
      [200, 'application/json', Status.UNKNOWN, 'Received HTTP status code 200 with content-type application/json'],
      [200, 'application/grpcweb', Status.UNKNOWN, 'Received HTTP status code 200 with content-type application/grpcweb'],
      [200, undefined, Status.UNKNOWN, 'Received HTTP status code 200 with content-type (none)'],
    ];
    let index = 0;
    const server = await serve((received) => {
      const [httpStatus, contentType] = cases[index]!;
      void received.body.then(() => {
        received.stream.respond({ ':status': httpStatus, ...(contentType === undefined ? {} : { 'content-type': contentType }), 'x-proxy': 'edge' });
        // Never ended: the call must not wait for the end of a body that is not gRPC.
        received.stream.write('503 from a proxy');
      });
    });
    const client = transport(server.target);
    for (const [httpStatus, contentType, code, details] of cases) {
      const error = await failureOf(call(client, undefined, undefined, 5000));
      expect(error, `${httpStatus} ${contentType}`).to.include({ code, details });
      expect(error.metadata.get('x-proxy')).to.deep.equal(['edge']);
      expect(await server.calls[index]!.closed, 'the stream was reset').to.equal(constants.NGHTTP2_CANCEL);
      index += 1;
    }
  });

  it('takes application/grpc with a subtype (+proto) or parameters (;charset) as gRPC', async () => {
    let contentType = '';
    const server = await serve((received) => answerOk(received, Buffer.from('pong'), { 'content-type': contentType }));
    const client = transport(server.target);
    for (contentType of ['application/grpc+proto', 'application/grpc;charset=utf-8']) expect(await call(client), contentType).to.deep.equal(Buffer.from('pong'));
  });

  it('fails UNKNOWN on a 200 whose status holds no grpc-status, trailers-only or after a message (http-grpc-status-mapping.md), keeping it as metadata', async () => {
    const cases: Array<[string, (received: ReceivedCall) => void]> = [
      ['trailers-only', answering({ 'content-type': 'application/grpc', 'x-other': '1' })],
      ['trailers after a message', answering({ 'content-type': 'application/grpc' }, [grpcFrame(Buffer.from('pong'))], { 'x-other': '1' })],
    ];
    for (const [name, answer] of cases) {
      const server = await serve(answer);
      const error = await failureOf(call(transport(server.target)));
      expect(error, name).to.include({ code: Status.UNKNOWN, details: 'Received HTTP status code 200' });
      expect(error.metadata.get('x-other'), name).to.deep.equal(['1']);
    }
  });

  it('fails INTERNAL on a response without trailers, on a truncated message, and on a compressed flag without grpc-encoding', async () => {
    const cases: Array<[string, (received: ReceivedCall) => void, RegExp]> = [
      ['no trailers', answering({ 'content-type': 'application/grpc' }, [grpcFrame(Buffer.from('pong'))]), /without trailers/],
      ['a truncated message', answering({ 'content-type': 'application/grpc' }, [grpcFrame(Buffer.alloc(100)).subarray(0, 20)], { 'grpc-status': '0' }), /truncated: 15 of 100 bytes/],
      ['a truncated prefix', answering({ 'content-type': 'application/grpc' }, [Buffer.from([0, 0])], { 'grpc-status': '0' }), /truncated/],
      ['a compressed flag without grpc-encoding', answering({ 'content-type': 'application/grpc' }, [grpcFrame(gzipSync('pong'), true)], { 'grpc-status': '0' }), /compressed, but no grpc-encoding/],
      ['a compressed flag with grpc-encoding identity', answering({ 'content-type': 'application/grpc', 'grpc-encoding': 'identity' }, [grpcFrame(Buffer.from('pong'), true)], { 'grpc-status': '0' }), /compressed, but no grpc-encoding/],
      ['an unknown encoding', answering({ 'content-type': 'application/grpc', 'grpc-encoding': 'snappy' }, [grpcFrame(Buffer.from('pong'), true)], { 'grpc-status': '0' }), /snappy/],
      ['a flag neither 0 nor 1', answering({ 'content-type': 'application/grpc' }, [Buffer.concat([Buffer.from([2]), grpcFrame(Buffer.from('pong')).subarray(1)])], { 'grpc-status': '0' }), /flag 2/],
    ];
    for (const [name, answer, details] of cases) {
      const server = await serve(answer);
      const error = await failureOf(call(transport(server.target)));
      expect(Status[error.code], name).to.equal('INTERNAL');
      expect(error.details, name).to.match(details);
    }
  });

  it('decodes a gzip or deflate message the server says it compressed', async () => {
    const server = await serve(answering({ 'content-type': 'application/grpc', 'grpc-encoding': 'gzip' }, [grpcFrame(gzipSync('pong'), true)], { 'grpc-status': '0' }));
    expect(await call(transport(server.target))).to.deep.equal(Buffer.from('pong'));
    expect(server.calls[0]!.headers['grpc-accept-encoding']).to.equal('identity,deflate,gzip');
  });

  it('fails UNIMPLEMENTED on OK without a message, and on a second message', async () => {
    const none = await serve(answering({ 'content-type': 'application/grpc' }, [], { 'grpc-status': '0', 'x-why': 'empty' }));
    expect(await failureOf(call(transport(none.target)))).to.deep.include({ code: Status.UNIMPLEMENTED, details: 'No message received' });
    const two = await serve(answering({ 'content-type': 'application/grpc' }, [grpcFrame(Buffer.from('a')), grpcFrame(Buffer.from('b'))], { 'grpc-status': '0' }));
    expect(await failureOf(call(transport(two.target)))).to.include({ code: Status.UNIMPLEMENTED, details: 'Too many responses received' });
  });

  it('takes a 4 MiB message through HTTP/2 flow control, and fails one byte more RESOURCE_EXHAUSTED without reading it all', async () => {
    const limit = 4 * 1024 * 1024;
    let size = limit;
    const server = await serve((received) => answerOk(received, Buffer.alloc(size, 7)));
    const client = transport(server.target);
    const answer = await call(client, undefined, undefined, 10_000);
    expect(answer.length).to.equal(limit);
    expect(answer.every((byte) => byte === 7)).to.equal(true);
    size = limit + 1;
    const error = await failureOf(call(client, undefined, undefined, 10_000));
    expect(error).to.include({ code: Status.RESOURCE_EXHAUSTED, details: `Received message larger than max (${limit + 1} vs. ${limit})` });
    expect(await server.calls[1]!.closed, 'the stream was reset').to.equal(constants.NGHTTP2_CANCEL);
  });

  it('applies maxReceiveMessageBytes', async () => {
    const server = await serve((received) => answerOk(received, Buffer.alloc(2000)));
    expect(await failureOf(call(transport(server.target, { maxReceiveMessageBytes: 1999 })))).to.include({ code: Status.RESOURCE_EXHAUSTED });
    expect((await call(transport(server.target, { maxReceiveMessageBytes: 2000 }))).length).to.equal(2000);
  });

  it('maps a stream the server resets by its HTTP/2 code', async () => {
    const cases: Array<[number, Status]> = [
      [constants.NGHTTP2_INTERNAL_ERROR, Status.INTERNAL],
      [constants.NGHTTP2_PROTOCOL_ERROR, Status.INTERNAL],
      [constants.NGHTTP2_CANCEL, Status.CANCELLED],
      [constants.NGHTTP2_ENHANCE_YOUR_CALM, Status.RESOURCE_EXHAUSTED],
      [constants.NGHTTP2_INADEQUATE_SECURITY, Status.PERMISSION_DENIED],
      [constants.NGHTTP2_NO_ERROR, Status.INTERNAL],
    ];
    let code = 0;
    const server = await serve((received) => void received.body.then(() => received.stream.close(code)));
    const client = transport(server.target);
    for (const [rst, status] of cases) {
      code = rst;
      const error = await failureOf(call(client));
      expect(Status[error.code], `RST_STREAM ${rst}`).to.equal(Status[status]);
    }
  });

  it('sends a stream the server refused again, transparently, and gives up UNAVAILABLE after two resends', async () => {
    const refusing = await serve((received, index) => (index === 0 ? received.stream.close(constants.NGHTTP2_REFUSED_STREAM) : answerOk(received)));
    expect(await call(transport(refusing.target))).to.deep.equal(Buffer.from('pong'));
    expect(refusing.calls, 'sent twice').to.have.length(2);

    const always = await serve((received) => received.stream.close(constants.NGHTTP2_REFUSED_STREAM));
    expect(await failureOf(call(transport(always.target)))).to.include({ code: Status.UNAVAILABLE, details: 'Stream refused by server' });
    expect(always.calls, 'three attempts').to.have.length(3);
  });

  it('ends a call whose answer never comes at its deadline, DEADLINE_EXCEEDED, resetting the stream with CANCEL', async () => {
    const server = await serve(() => undefined);
    const started = Date.now();
    expect(await failureOf(call(transport(server.target), undefined, undefined, 300))).to.include({ code: Status.DEADLINE_EXCEEDED });
    // Not before the deadline; by it, with a busy host's slack (docs/testing.md, every suite on a busy host).
    expect(Date.now() - started, 'not before the deadline').to.be.at.least(290);
    expect(Date.now() - started, 'at the deadline').to.be.below(300 + 2_500);
    expect(await server.calls[0]!.closed).to.equal(constants.NGHTTP2_CANCEL);
    expect(server.calls[0]!.headers['grpc-timeout']).to.match(/^\d+m$/);
    expect(Number.parseInt(server.calls[0]!.headers['grpc-timeout'] as string, 10)).to.be.within(1, 300);
  });

  it('sends nothing for a deadline already passed or a signal already aborted', async () => {
    const server = await serve((received) => answerOk(received));
    const client = transport(server.target);
    expect(await failureOf(client.call(PATH, Buffer.from('x'), new Metadata(), { deadline: Date.now() - 1 }))).to.include({ code: Status.DEADLINE_EXCEEDED });
    expect(await failureOf(client.call(PATH, Buffer.from('x'), new Metadata(), { deadline: Date.now() + 1000, signal: AbortSignal.abort() }))).to.include({ code: Status.CANCELLED });
    expect(server.calls).to.have.length(0);
  });

  it('cancels a call when its signal aborts: RST_STREAM CANCEL, and the call rejects CANCELLED', async () => {
    const server = await serve(() => undefined);
    const controller = new AbortController();
    const pending = failureOf(call(transport(server.target), undefined, undefined, 10_000, { signal: controller.signal }));
    while (server.calls.length === 0) await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    expect(await pending).to.include({ code: Status.CANCELLED, details: 'Cancelled on client' });
    expect(await server.calls[0]!.closed).to.equal(constants.NGHTTP2_CANCEL);
  });

  it('fails a call whose onHeaders throws INTERNAL, without a crash', async () => {
    const server = await serve((received) => answerOk(received));
    const error = await failureOf(call(transport(server.target), undefined, undefined, 2000, { onHeaders: () => {
      throw new Error('listener bug');
    } }));
    expect(error).to.include({ code: Status.INTERNAL });
    expect(error.details).to.match(/listener bug/);
  });

  it('hands a successful call’s trailers to onTrailers once, before it resolves, and not a failed call’s', async () => {
    const echoed = Buffer.from([0xab, 0xab, 0xab]);
    let status = '0';
    const server = await serve((received) => answerOk(received, Buffer.from('pong'), {}, { 'grpc-status': status, 'x-echo-bin': echoed.toString('base64'), 'x-plain': 'yes' }));
    const client = transport(server.target);
    const seen: Array<Metadata | 'resolved'> = [];
    const answer = await call(client, undefined, undefined, 2000, { onTrailers: (trailers) => seen.push(trailers) }).then((bytes) => {
      seen.push('resolved');
      return bytes;
    });
    expect(answer).to.deep.equal(Buffer.from('pong'));
    expect(seen).to.have.length(2);
    expect(seen[1]).to.equal('resolved');
    const trailers = seen[0] as Metadata;
    expect(trailers.get('x-echo-bin')).to.deep.equal([echoed]);
    expect(trailers.get('x-plain')).to.deep.equal(['yes']);
    expect(trailers.get('grpc-status'), 'the status is not metadata').to.deep.equal([]);

    status = String(Status.NOT_FOUND);
    const told: Metadata[] = [];
    const error = await failureOf(call(client, undefined, undefined, 2000, { onTrailers: (t) => told.push(t) }));
    expect(error.code).to.equal(Status.NOT_FOUND);
    expect(error.metadata.get('x-echo-bin'), 'a failed call’s trailers are its error’s metadata').to.deep.equal([echoed]);
    expect(told).to.have.length(0);
  });

  it('fails a call whose onTrailers throws INTERNAL, without a crash', async () => {
    const server = await serve((received) => answerOk(received));
    const error = await failureOf(call(transport(server.target), undefined, undefined, 2000, { onTrailers: () => {
      throw new Error('listener bug');
    } }));
    expect(error).to.include({ code: Status.INTERNAL });
    expect(error.details).to.match(/onTrailers threw: .*listener bug/);
  });

  it('reads the -bin trailers of a status as bytes (the rich error model’s grpc-status-details-bin)', async () => {
    const details = Buffer.from([8, 3, 18, 3, 98, 97, 100]);
    const server = await serve(answering({ 'content-type': 'application/grpc' }, [], { 'grpc-status': '3', 'grpc-message': 'bad', 'grpc-status-details-bin': details.toString('base64') }));
    const error = await failureOf(call(transport(server.target)));
    expect(error.metadata.get('grpc-status-details-bin')).to.deep.equal([details]);
  });
});
