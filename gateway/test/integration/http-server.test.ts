import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { expect } from 'chai';
import { closeGracefully, listen, type ListeningServer } from '../../src/http/http-server';

/**
 * `listen`'s refusals of what follows a request on the same connection wait for that request's
 * response (RFC 9112 section 9.3.2). The app here holds each response until the test releases
 * it, after the server has reported the refusal's cause, so the order is not left to timing.
 */
describe('listen: a refusal behind a request in flight', () => {
  let listening: ListeningServer;
  const held: ServerResponse[] = [];
  let served: () => void = () => undefined;

  before(async () => {
    listening = await listen(
      (_request, response) => {
        held.push(response);
        served();
      },
      '127.0.0.1',
      0,
      { headersTimeoutMs: 200, requestTimeoutMs: 400, keepAliveTimeoutMs: 5000, maxConnections: 10 },
    );
  });

  after(async () => {
    await closeGracefully(listening.server);
  });

  /** Sends `bytes`, releases the first response once the server has reported `event`, and reads until the server closes. */
  async function exchange(bytes: string, event: 'clientError'): Promise<string> {
    const requested = new Promise<void>((resolve) => (served = resolve));
    const refused = once(listening.server, event);
    const socket = connect(listening.port, '127.0.0.1', () => socket.write(bytes));
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    const closed = once(socket, 'close');
    await requested;
    await refused;
    held.shift()!.end('first');
    await closed;
    // A request whose body broke reached the app too; its connection is gone.
    held.splice(0);
    return received;
  }

  for (const [what, rest, status] of [
    ['a request that does not arrive in time', 'GET /late HTTP/1.1\r\nHost: x\r\n', '408 Request Timeout'],
    ['a malformed chunk', 'POST /broken HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', '400 Bad Request'],
    ['bytes that are not HTTP', 'BLAH\r\n\r\n', '400 Bad Request'],
  ] as const) {
    it(`answers the request in flight, then refuses ${what}`, async () => {
      const received = await exchange(`GET /first HTTP/1.1\r\nHost: x\r\n\r\n${rest}`, 'clientError');
      const replies = received.split(/(?=HTTP\/1\.1 \d{3} )/);
      expect(replies, received).to.have.length(2);
      expect(replies[0]).to.match(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nfirst$/);
      expect(replies[1]).to.match(new RegExp(`^HTTP/1\\.1 ${status}\\r\\nDate: .+ GMT\\r\\nContent-Type: application/json; charset=utf-8\\r\\n`));
      expect(replies[1]).to.match(/\r\nConnection: close\r\n\r\n\{"code":"invalid_request",/);
    });
  }
});

/**
 * Issue 45: a shutdown that begins in the loop turn in which a request's bytes have arrived, before
 * they are read (a signal handled first, or a sweep's timer), must answer that request, not reset
 * its connection as idle: Node counts a connection whose request it has not read yet as idle.
 */
describe('closeGracefully: a request that arrived before the shutdown began', () => {
  for (const accepted of [true, false]) {
    it(`is answered, and its connection then closed, even when the server had not read it yet (connection ${accepted ? 'accepted' : 'not accepted yet'})`, async () => {
      const listening = await listen((request, response) => {
        request.resume();
        request.on('end', () => response.end('answered'));
      }, '127.0.0.1', 0);
      const socket = connect(listening.port, '127.0.0.1');
      let received = '';
      socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
      const errors: string[] = [];
      socket.on('error', (error: NodeJS.ErrnoException) => errors.push(error.code ?? error.message));
      const closed = once(socket, 'close');
      await Promise.all([once(socket, 'connect'), ...(accepted ? [once(listening.server, 'connection')] : [])]);
      socket.write('POST /pets HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcd');
      // The shutdown begins in the next turn's timers phase, before its poll phase accepts the
      // connection or reads the bytes (the spin makes the timer due by then, as a busy process's
      // signal is).
      const drained = new Promise<void>((resolve, reject) => setTimeout(() => closeGracefully(listening.server).then(resolve, reject), 0));
      const spinUntil = Date.now() + 5;
      while (Date.now() < spinUntil) {
        // A busy event loop.
      }
      await closed;
      await drained;
      expect(errors, 'the connection was reset').to.deep.equal([]);
      expect(received).to.match(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nanswered$/);
    });
  }
});
