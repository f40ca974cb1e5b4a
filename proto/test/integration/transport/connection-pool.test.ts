import { constants, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import { createServer as createTcpServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Metadata, type ServiceError, status as Status } from '@grpc/grpc-js';
import { expect } from 'chai';
import { createUnaryTransport, type UnaryTransport, type UnaryTransportOptions } from '../../../transport/unary-transport';
import { answerOk, type H2Server, type ReceivedCall, startH2Server } from './support/h2-server';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy';
import { waitFor } from './support/wait-for';
import { failureOf } from './support/call-failure';

const PATH = '/test.Echo/Call';

/** A port nothing listens on (listened on, then closed). */
async function closedPort(): Promise<number> {
  const server = createTcpServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * "At once" told from "at the deadline" on a busy host (docs/testing.md, every suite on a busy
 * host): calls get a 10 s deadline, and one that must fail at once must end within a quarter of it.
 */
const LONG_DEADLINE_MS = 10_000;
const AT_ONCE_MS = LONG_DEADLINE_MS / 4;

describe('createUnaryTransport: connections, balancing and failures (servers on port 0)', function () {
  this.timeout(30_000);
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function serve(answer: (call: ReceivedCall, index: number) => void, options?: { host?: string; port?: number }): Promise<H2Server> {
    const server = await startH2Server(answer, options);
    cleanups.push(() => server.close());
    return server;
  }

  async function proxy(targetPort: number | undefined, delayMs?: number): Promise<TcpProxy> {
    const made = await startTcpProxy(targetPort, delayMs);
    cleanups.push(() => made.close());
    return made;
  }

  function transport(target: string, options: UnaryTransportOptions = {}): UnaryTransport {
    const made = createUnaryTransport(target, { proxy: false, ...options });
    cleanups.push(() => made.close());
    return made;
  }

  const call = (to: UnaryTransport, deadlineMs = 2000) => to.call(PATH, Buffer.from('ping'), new Metadata(), { deadline: Date.now() + deadlineMs });
  /** Answers with the server's name. */
  const named = (name: string) => (received: ReceivedCall) => answerOk(received, Buffer.from(name));

  it('spreads calls round robin over every A and AAAA address of a name, one connection per address', async () => {
    const v4 = await serve(named('v4'));
    const v6 = await serve(named('v6'), { host: '::1', port: v4.port });
    const lookups: string[] = [];
    const pets = transport(`dns:///pets.test:${v4.port}`, {
      lookup: async (hostname) => {
        lookups.push(hostname);
        return [
          { address: '127.0.0.1', family: 4 },
          { address: '::1', family: 6 },
        ];
      },
    });
    await call(pets);
    await waitFor(() => pets.connections().ready === 2, 5000, () => JSON.stringify(pets.connections()));
    const names: string[] = [];
    for (let index = 0; index < 20; index += 1) names.push((await call(pets)).toString());
    expect(names.filter((name) => name === 'v4'), names.join(' ')).to.have.length(10);
    for (let index = 1; index < names.length; index += 1) expect(names[index], 'consecutive calls').to.not.equal(names[index - 1]);
    expect(lookups).to.deep.equal(['pets.test']);
    expect(v4.sessions.size + v6.sessions.size, 'one connection per address').to.equal(2);
    expect(pets.connections()).to.deep.equal({ connecting: 0, ready: 2, draining: 0, transient_failure: 0, idle: 0 });
  });

  it('connects on the first call (or state(true)), and a call made while connecting waits for the connection within its deadline', async () => {
    const server = await serve(named('slow'));
    const slow = await proxy(server.port, 300);
    const pets = transport(`127.0.0.1:${slow.port}`);
    expect(pets.state()).to.equal('IDLE');
    const started = Date.now();
    const answer = call(pets);
    expect(pets.state()).to.equal('CONNECTING');
    expect((await answer).toString()).to.equal('slow');
    expect(Date.now() - started).to.be.at.least(290);
    expect(pets.state()).to.equal('READY');

    const idle = transport(`127.0.0.1:${server.port}`);
    expect(idle.state(true)).to.equal('CONNECTING');
    await waitFor(() => idle.state() === 'READY', 5000);
  });

  it('fails a call at once UNAVAILABLE while every address is failing (wait-for-ready off), saying why; recovers once one is back', async () => {
    const port = await closedPort();
    const pets = transport(`ipv4:127.0.0.1:${port},127.0.0.1:${await closedPort()}`, { backoff: { initialMs: 50, maxMs: 200 } });
    let started = Date.now();
    const error = await failureOf(call(pets, LONG_DEADLINE_MS));
    expect(error.code).to.equal(Status.UNAVAILABLE);
    expect(error.details).to.match(/^No connection established\. Last error: 127\.0\.0\.1:\d+: .*ECONNREFUSED/);
    expect(Date.now() - started, 'at once, not at the deadline').to.be.below(AT_ONCE_MS);
    expect(pets.state()).to.equal('TRANSIENT_FAILURE');
    expect(pets.connections()).to.deep.include({ transient_failure: 2, ready: 0 });
    // Sticky: the addresses are retried in the background, and the state stays TRANSIENT_FAILURE meanwhile.
    for (let index = 0; index < 5; index += 1) {
      started = Date.now();
      expect((await failureOf(call(pets, LONG_DEADLINE_MS))).code).to.equal(Status.UNAVAILABLE);
      expect(Date.now() - started, 'at once, not at the deadline').to.be.below(AT_ONCE_MS);
    }
    await serve(named('back'), { port });
    await waitFor(() => pets.state() === 'READY', 5000, () => pets.state());
    expect((await call(pets)).toString()).to.equal('back');
  });

  it('fails calls at once UNAVAILABLE while the name does not resolve (or resolves to nothing), and serves once it does', async () => {
    const server = await serve(named('found'));
    let answer: () => Promise<Array<{ address: string; family: number }>> = () => Promise.reject(Object.assign(new Error('getaddrinfo ENOTFOUND pets.test'), { code: 'ENOTFOUND' }));
    let lookups = 0;
    const pets = transport(`dns:///pets.test:${server.port}`, {
      lookup: () => {
        lookups += 1;
        return answer();
      },
      backoff: { initialMs: 50, maxMs: 100 },
      minResolutionIntervalMs: 0,
    });
    const unresolved = await failureOf(call(pets, 10_000));
    expect(unresolved.code).to.equal(Status.UNAVAILABLE);
    expect(unresolved.details).to.equal(`name resolution failed for pets.test:${server.port}: Error: getaddrinfo ENOTFOUND pets.test`);
    expect(pets.state()).to.equal('TRANSIENT_FAILURE');
    answer = async () => [];
    await waitFor(() => lookups >= 3, 5000, () => `${lookups} resolutions`);
    expect((await failureOf(call(pets, 10_000))).details).to.equal('the name resolved to no address');
    answer = async () => [{ address: '127.0.0.1', family: 4 }];
    await waitFor(() => pets.state() === 'READY', 5000, () => pets.state());
    expect((await call(pets)).toString()).to.equal('found');
  });

  it('reconnects a failing address with gRPC’s connection backoff: waits grow by the multiplier, within the jitter, up to the maximum', async () => {
    const failing = await proxy(undefined);
    const pets = transport(`127.0.0.1:${failing.port}`, { backoff: { initialMs: 100, multiplier: 1.6, jitter: 0.2, maxMs: 600 } });
    pets.state(true);
    await waitFor(() => failing.accepted.length >= 8, 15_000, () => `${failing.accepted.length} attempts`);
    const waits = failing.accepted.slice(1, 8).map((at, index) => at - failing.accepted[index]!);
    const expected = [100, 160, 256, 409.6, 600, 600, 600];
    for (const [index, wait] of waits.entries()) {
      // The round's backoff less its jitter is the least time between two attempts' starts; the
      // server sees each after its connect, which a loaded machine may slow by tens of milliseconds.
      expect(wait, `wait ${index + 1} of ${waits.join(', ')} ms`).to.be.at.least(expected[index]! * (index === 0 ? 1 : 0.8) - 40);
      expect(wait, `wait ${index + 1} of ${waits.join(', ')} ms`).to.be.below(expected[index]! * 1.2 + 400);
    }
  });

  it('gives up a connection attempt that outlasts its round and the minimum connect timeout: the calls waiting fail UNAVAILABLE', async () => {
    // Accepts TCP, never speaks HTTP/2.
    const accepted: Socket[] = [];
    const mute: Server = createTcpServer((socket) => accepted.push(socket));
    await new Promise<void>((resolve) => mute.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => {
      for (const socket of accepted) socket.destroy();
      return new Promise((resolve) => mute.close(resolve));
    });
    const pets = transport(`127.0.0.1:${(mute.address() as AddressInfo).port}`, { backoff: { initialMs: 100, minConnectTimeoutMs: 300 } });
    const started = Date.now();
    const error = await failureOf(call(pets, 10_000));
    expect(error.code).to.equal(Status.UNAVAILABLE);
    expect(error.details).to.match(/connect timed out after 300 ms/);
    expect(Date.now() - started).to.be.within(290, 5000);
  });

  it('resolves the name again when a connection goes away (no sooner than the minimum interval) and periodically', async () => {
    let lookups = 0;
    const connections = new Set<unknown>();
    // Every connection is closed by the server (GOAWAY) after one call.
    const server = await serve((received) => {
      const { session } = received.stream;
      connections.add(session);
      answerOk(received);
      void received.closed.then(() => session?.close());
    });
    const lookup = async () => {
      lookups += 1;
      return [{ address: '127.0.0.1', family: 4 }];
    };
    const losing = transport(`dns:///pets.test:${server.port}`, { lookup, minResolutionIntervalMs: 400, resolutionRefreshMs: 60_000 });
    const started = Date.now();
    while (Date.now() - started < 1000) await call(losing);
    expect(connections.size, 'connections lost and replaced').to.be.at.least(3);
    expect(lookups, 'resolved again after losses').to.be.at.least(2);
    expect(lookups, 'at most one resolution per 400 ms').to.be.at.most(1 + Math.ceil((Date.now() - started) / 400));

    let refreshes = 0;
    const steady = await serve((received) => answerOk(received));
    const refreshed = transport(`dns:///pets.test:${steady.port}`, {
      lookup: async () => {
        refreshes += 1;
        return [{ address: '127.0.0.1', family: 4 }];
      },
      minResolutionIntervalMs: 0,
      resolutionRefreshMs: 50,
    });
    await call(refreshed);
    await waitFor(() => refreshes >= 4, 5000, () => `${refreshes} resolutions`);
    expect(steady.sessions.size, 'the same connection throughout').to.equal(1);
  });

  it('waits, while the name is resolved again after its only connection went away, for the answer, and calls the new address', async () => {
    // A pod replaced behind a headless Service: its connection closes, and DNS (here answering
    // after 300 ms) gives the new pod's address. A call made meanwhile is not failed on the old one.
    const old = await serve(named('old'));
    const replacement = await serve(named('new'), { host: '127.0.0.2', port: old.port });
    let addresses = ['127.0.0.1'];
    let answerAfterMs = 0;
    const pets = transport(`dns:///pets.test:${old.port}`, {
      lookup: async () => {
        const now = addresses;
        await new Promise((resolve) => setTimeout(resolve, answerAfterMs));
        return now.map((address) => ({ address, family: 4 }));
      },
      minResolutionIntervalMs: 0,
      resolutionRefreshMs: 60_000,
    });
    expect((await call(pets)).toString()).to.equal('old');
    addresses = ['127.0.0.2'];
    answerAfterMs = 300;
    await old.close();
    await waitFor(() => pets.state() !== 'READY', 5000, () => pets.state());
    expect(pets.state()).to.equal('CONNECTING');
    const started = Date.now();
    expect((await call(pets, LONG_DEADLINE_MS)).toString()).to.equal('new');
    expect(Date.now() - started, 'within the answer and a connection, not at the deadline').to.be.below(AT_ONCE_MS);
    expect(replacement.sessions.size).to.equal(1);
  });

  it('drains an address gone from the name: its call under way finishes, no new call goes there, its connection closes', async () => {
    let holdFirst = true;
    const held: ReceivedCall[] = [];
    const first = await serve((received) => (holdFirst ? held.push(received) : answerOk(received, Buffer.from('first'))));
    const second = await serve(named('second'), { host: '127.0.0.2', port: first.port });
    let addresses = ['127.0.0.1', '127.0.0.2'];
    const pets = transport(`dns:///pets.test:${first.port}`, {
      lookup: async () => addresses.map((address) => ({ address, family: 4 })),
      minResolutionIntervalMs: 0,
      resolutionRefreshMs: 50,
    });
    pets.state(true);
    await waitFor(() => pets.connections().ready === 2, 5000);
    const pending: Array<Promise<Buffer>> = [call(pets, 10_000), call(pets, 10_000)];
    await waitFor(() => held.length === 1, 5000);
    addresses = ['127.0.0.2'];
    await waitFor(() => pets.connections().draining === 1, 5000, () => JSON.stringify(pets.connections()));
    for (let index = 0; index < 10; index += 1) expect((await call(pets)).toString()).to.equal('second');
    expect(first.calls, 'no new call on the drained address').to.have.length(1);
    holdFirst = false;
    answerOk(held[0]!, Buffer.from('first'));
    expect((await Promise.all(pending)).map(String).sort()).to.deep.equal(['first', 'second']);
    await waitFor(() => pets.connections().draining === 0 && first.sessions.size === 0, 5000, () => JSON.stringify(pets.connections()));
    expect(second.sessions.size).to.equal(1);
  });

  it('on GOAWAY takes no new stream on the old connection and loses none: streams above its last stream id go again on a new connection', async () => {
    const held: ReceivedCall[] = [];
    let holding = true;
    const server = await serve((received) => (holding ? held.push(received) : answerOk(received, Buffer.from(`session ${[...server.sessions].indexOf(received.stream.session as never)}`))));
    const pets = transport(server.target);
    const pending = [call(pets, 10_000), call(pets, 10_000), call(pets, 10_000)];
    await waitFor(() => held.length === 3, 5000);
    const [firstStream, secondStream] = held.map((received) => received.stream.id!);
    const oldSession = held[0]!.stream.session!;
    holding = false;
    // The server will answer the first two and never processed the third.
    oldSession.goaway(constants.NGHTTP2_NO_ERROR, secondStream!);
    answerOk(held[0]!);
    answerOk(held[1]!);
    const answers = await Promise.all(pending);
    expect(answers.slice(0, 2).map(String)).to.deep.equal(['pong', 'pong']);
    expect(server.calls.length, 'the third sent again').to.equal(4);
    expect(server.calls[3]!.stream.session, 'on a new connection').to.not.equal(oldSession);
    expect(firstStream).to.be.below(secondStream!);
    const later = await call(pets);
    expect(server.calls[4]!.stream.session).to.not.equal(oldSession);
    expect(later.length).to.be.above(0);
  });

  it('closes a connection gone silent after a keepalive ping goes unanswered: its call fails UNAVAILABLE, the next go to another address', async () => {
    const server = await serve(named('direct'));
    const silent = await proxy(server.port);
    const pets = transport(`ipv4:127.0.0.1:${silent.port},127.0.0.1:${server.port}`, { keepalive: { timeMs: 100, timeoutMs: 200 } });
    pets.state(true);
    await waitFor(() => pets.connections().ready === 2, 5000);
    silent.freeze();
    const outcomes = await Promise.all([0, 1, 2, 3].map(() => call(pets, 5000).then(String, (error: ServiceError) => Status[error.code])));
    expect(outcomes.filter((outcome) => outcome === 'direct'), outcomes.join(' ')).to.have.length(2);
    expect(outcomes.filter((outcome) => outcome === 'UNAVAILABLE'), outcomes.join(' ')).to.have.length(2);
    for (let index = 0; index < 6; index += 1) expect((await call(pets)).toString()).to.equal('direct');
  });

  it('pings half as often after a server’s GOAWAY too_many_pings (gRFC A8)', async () => {
    const pings: Array<{ session: number; at: number }> = [];
    const started: number[] = [];
    const server = await serve((received) => answerOk(received));
    let sessions = 0;
    const onSession = (session: ServerHttp2Session): void => {
      const index = sessions++;
      started.push(Date.now());
      session.on('ping', () => {
        pings.push({ session: index, at: Date.now() });
        // The first connection's first ping is one too many.
        if (index === 0) session.goaway(constants.NGHTTP2_ENHANCE_YOUR_CALM, 0, Buffer.from('too_many_pings'));
      });
    };
    server.onSession(onSession);
    // A ping after the interval, not after twice it, told apart with the interval as the slack a
    // busy host's timers get (docs/testing.md, every suite on a busy host).
    const intervalMs = 2000;
    const pets = transport(server.target, { keepalive: { timeMs: intervalMs, timeoutMs: 10_000 } });
    await call(pets);
    await waitFor(() => pings.some((ping) => ping.session === 1), 4 * intervalMs + 10_000, () => JSON.stringify(pings));
    const first = pings.find((ping) => ping.session === 0)!;
    const second = pings.find((ping) => ping.session === 1)!;
    expect(first.at - started[0]!, 'the first connection pinged after the interval, before twice it').to.be.at.least(0.9 * intervalMs).and.below(2 * intervalMs);
    expect(second.at - started[1]!, 'the next after twice the interval').to.be.at.least(1.9 * intervalMs);
  });

  it('on close(): calls under way finish, new ones fail UNAVAILABLE, and every connection closes', async () => {
    const held: ReceivedCall[] = [];
    const server = await serve((received) => held.push(received));
    const pets = createUnaryTransport(server.target, { proxy: false });
    const pending = call(pets, 10_000);
    await waitFor(() => held.length === 1, 5000);
    pets.close();
    expect(pets.state()).to.equal('SHUTDOWN');
    expect((await failureOf(call(pets))).code).to.equal(Status.UNAVAILABLE);
    answerOk(held[0]!);
    expect((await pending).toString()).to.equal('pong');
    await waitFor(() => server.sessions.size === 0, 5000);
    await waitFor(() => Object.values(pets.connections()).every((count) => count === 0), 5000, () => JSON.stringify(pets.connections()));
  });

  it('calls a server on a Unix socket', async () => {
    const path = join(tmpdir(), `unary-transport-${process.pid}-${Date.now()}.sock`);
    const { createServer } = await import('node:http2');
    const server = createServer();
    server.on('stream', (serverStream) => {
      const stream = serverStream as ServerHttp2Stream;
      stream.on('error', () => undefined);
      stream.resume();
      stream.on('end', () => {
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.end(Buffer.from([0, 0, 0, 0, 2, 111, 107]));
      });
    });
    await new Promise<void>((resolve) => server.listen(path, resolve));
    cleanups.push(() => new Promise((resolve) => server.close(resolve)));
    expect((await call(transport(`unix:${path}`))).toString()).to.equal('ok');
  });
});
