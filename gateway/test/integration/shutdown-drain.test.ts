import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { expect } from 'chai';
import { holdHttpRequest } from '../../../system-test/support/commands';
import { freePort } from '../../../system-test/support/redis-server';
import { type ServiceProcess, startService } from '../../../system-test/support/service-process';

/** A raw keep-alive connection that sends one request at a time and reads whole responses. */
class Connection {
  // Bytes, not text: Content-Length counts bytes, and a body may hold characters of several.
  private buffer = Buffer.alloc(0);
  private readonly waiting: Array<() => void> = [];
  ended = false;
  reset = false;

  private constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      for (const wake of this.waiting.splice(0)) wake();
    });
    socket.on('end', () => (this.ended = true));
    socket.on('error', (error: NodeJS.ErrnoException) => (this.reset = error.code === 'ECONNRESET'));
  }

  static async open(port: number): Promise<Connection> {
    const socket = connect(port, '127.0.0.1');
    await once(socket, 'connect');
    return new Connection(socket);
  }

  /** Sends a GET and resolves with the status line and headers of its complete response. */
  async get(path: string): Promise<{ status: number; headers: string }> {
    this.socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
    for (;;) {
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end >= 0) {
        const head = this.buffer.subarray(0, end).toString('latin1');
        const length = Number(/content-length: *([0-9]+)/i.exec(head)?.[1] ?? 0);
        if (this.buffer.length >= end + 4 + length) {
          this.buffer = this.buffer.subarray(end + 4 + length);
          return { status: Number(head.split(' ')[1]), headers: head.toLowerCase() };
        }
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  async closedByPeer(): Promise<void> {
    if (!this.ended) await once(this.socket, 'end');
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/**
 * SHUTDOWN_DELAY_MS: on SIGTERM readiness fails at once, while the public listener keeps serving
 * for the delay, so requests already on their way (the load balancer has not yet seen readiness
 * fail) are answered instead of refused. A keep-alive connection gets `Connection: close` on its
 * next response and is then closed by the gateway, never reset.
 */
describe('gateway drain delay on SIGTERM', function () {
  this.timeout(30_000);
  let gateway: ServiceProcess | undefined;

  afterEach(async () => {
    await gateway?.stop('SIGKILL');
  });

  it('fails readiness at once but keeps serving for SHUTDOWN_DELAY_MS, closing keep-alive connections politely', async () => {
    gateway = await startService('gateway', { HOST: '127.0.0.1', SHUTDOWN_DELAY_MS: '3000', PET_SERVICE_ADDR: `127.0.0.1:${await freePort()}` });
    const idle = await Connection.open(gateway.port);
    try {
      const first = await idle.get('/v1/openapi.json');
      expect(first.status).to.equal(200);
      expect(first.headers).to.not.include('connection: close');

      const exited = gateway.stop('SIGTERM');
      await gateway.waitForLog((line) => line.msg === 'shutting down');
      const readiness = await fetch(`http://127.0.0.1:${gateway.adminPort}/readyz`);
      expect(readiness.status).to.equal(503);
      expect(await readiness.json()).to.deep.equal({ status: 'draining' });

      // Still serving: the idle keep-alive connection, and a new one.
      const second = await idle.get('/v1/openapi.json');
      expect(second.status).to.equal(200);
      expect(second.headers).to.include('connection: close');
      await idle.closedByPeer();
      expect(idle.reset, 'the connection was reset').to.equal(false);
      const fresh = await fetch(`http://127.0.0.1:${gateway.port}/v1/pets`);
      expect(fresh.status).to.equal(401);
      expect(fresh.headers.get('connection')).to.equal('close');

      expect(await exited).to.equal(0);
    } finally {
      idle.destroy();
    }
  });

  // Issue 45: the header was decided as a request arrived, so one already in flight when the
  // signal came was answered with `Connection: keep-alive` and then closed under the client.
  it('answers a request that was in flight when the signal came with Connection: close, then closes its connection', async () => {
    gateway = await startService('gateway', { HOST: '127.0.0.1', SHUTDOWN_DELAY_MS: '3000', PET_SERVICE_ADDR: `127.0.0.1:${await freePort()}` });
    const request = await holdHttpRequest(gateway.port);
    const exited = gateway.stop('SIGTERM');
    await gateway.waitForLog((line) => line.msg === 'shutting down');
    const head = await request.finish();
    // No pet service: the gateway's own 503, its connection closed once written.
    expect(head).to.match(/^HTTP\/1\.1 503 Service Unavailable\r\n/);
    expect(head.toLowerCase()).to.match(/\r\nconnection: close(\r\n|$)/);
    expect(head.toLowerCase()).to.not.include('keep-alive');
    expect(await exited).to.equal(0);
  });
});
