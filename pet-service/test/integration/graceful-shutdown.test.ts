import { once } from 'node:events';
import { type ClientHttp2Session, connect, constants } from 'node:http2';
import { connect as connectTcp } from 'node:net';
import { status as Status } from '@grpc/grpc-js';
import { PetServiceService } from '@petstore/proto';
import { expect } from 'chai';
import { startService, type ServiceProcess } from '../../../system-test/support/service-process';

/** A ListPets call the server already has (its HEADERS), whose request message is still to come. */
interface HeldCall {
  /** Sends the message; resolves with the gRPC status name, or `reset` if the stream was torn down. */
  send(): Promise<string>;
  /** Resolves the same way without sending anything. */
  readonly outcome: Promise<string>;
}

/**
 * Opens a ListPets call over raw HTTP/2 and withholds its message, as a slow client would: the
 * call is in flight on the server, and stays so for as long as the test likes, with no test hook
 * in the service.
 */
function holdCall(session: ClientHttp2Session): HeldCall {
  const stream = session.request({
    ':method': 'POST',
    ':path': '/petstore.v1.PetService/ListPets',
    'content-type': 'application/grpc',
    te: 'trailers',
  });
  const outcome = new Promise<string>((resolve) => {
    let grpcStatus: string | undefined;
    const record = (headers: Record<string, unknown>) => {
      if (headers['grpc-status'] !== undefined) grpcStatus = Status[Number(headers['grpc-status'])];
    };
    stream.on('response', record);
    stream.on('trailers', record);
    stream.on('error', () => resolve('reset'));
    stream.on('close', () => resolve(stream.rstCode === constants.NGHTTP2_NO_ERROR ? (grpcStatus ?? 'reset') : 'reset'));
    stream.resume();
  });
  return {
    outcome,
    send() {
      const message = PetServiceService.listPets.requestSerialize({ pageSize: 1, pageToken: '', status: 0 });
      const frame = Buffer.alloc(5 + message.length);
      frame.writeUInt32BE(message.length, 1);
      message.copy(frame, 5);
      stream.end(frame);
      return outcome;
    },
  };
}

/** Resolves once the server has processed every frame sent before: a PING is answered in order. */
function roundTrip(session: ClientHttp2Session): Promise<void> {
  return new Promise((resolve, reject) => session.ping((error) => (error ? reject(error) : resolve())));
}

function connectOutcome(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connectTcp(port, '127.0.0.1', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

describe('pet service process on SIGTERM', function () {
  this.timeout(30_000);
  let petService: ServiceProcess;
  let session: ClientHttp2Session;

  afterEach(async () => {
    session?.destroy();
    await petService?.stop('SIGKILL');
  });

  async function startWith50HeldCalls(shutdownTimeoutMs: number): Promise<HeldCall[]> {
    petService = await startService('pet-service', { PET_SERVICE_HOST: '127.0.0.1', SHUTDOWN_TIMEOUT_MS: String(shutdownTimeoutMs) });
    session = connect(`http://127.0.0.1:${petService.port}`);
    session.on('error', () => undefined);
    await once(session, 'connect');
    const calls = Array.from({ length: 50 }, () => holdCall(session));
    await roundTrip(session);
    return calls;
  }

  it('refuses new connections and finishes all 50 in-flight calls, then exits 0 within SHUTDOWN_TIMEOUT_MS', async () => {
    const calls = await startWith50HeldCalls(5000);
    const started = Date.now();
    const exited = petService.stop('SIGTERM');
    await petService.waitForLog((line) => line.msg === 'shutting down');

    expect(await connectOutcome(petService.port)).to.equal('ECONNREFUSED');
    expect(await Promise.all(calls.map((call) => call.send()))).to.deep.equal(Array(50).fill('OK'));
    expect(await exited).to.equal(0);
    expect(Date.now() - started).to.be.below(5000);
  });

  it('cancels calls that outlive SHUTDOWN_TIMEOUT_MS and exits 1', async () => {
    const calls = await startWith50HeldCalls(500);
    const started = Date.now();
    expect(await petService.stop('SIGTERM')).to.equal(1);
    expect(Date.now() - started).to.be.within(500, 1500);
    expect(new Set(await Promise.all(calls.map((call) => call.outcome)))).to.not.include('OK');
  });
});
