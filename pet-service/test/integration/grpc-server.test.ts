import { on } from 'node:events';
import { Writable } from 'node:stream';
import { type ClientReadableStream, connectivityState, credentials, Metadata, status as Status, type ServiceError } from '@grpc/grpc-js';
import {
  CALLER_ID_METADATA,
  createPetServiceClient,
  type CreatePetRequest,
  currentEtagOf,
  type CreatePetResponse,
  type DeletePetRequest,
  type DeletePetResponse,
  type GetPetRequest,
  fieldViolationOf,
  fieldViolationsOf,
  type GetPetResponse,
  IDEMPOTENCY_KEY_METADATA,
  type ListPetsRequest,
  type ListPetsResponse,
  PET_SERVICE_NAME,
  PetServiceClient,
  PetStatus,
  refusedTransitionOf,
  STATUS_DETAILS_METADATA,
  type UpdatePetRequest,
  type UpdatePetResponse,
} from '@petstore/proto';
import { BadRequest } from '@petstore/proto/gen/google/rpc/error_details';
import { Status as RpcStatus } from '@petstore/proto/gen/google/rpc/status';
import { expect } from 'chai';
import { service as healthService } from 'grpc-health-check';
import { makeGenericClientConstructor } from '@grpc/grpc-js';
import pino from 'pino';
import { MemoryPetRepository } from '../../src/store/memory-pet-repository';
import { createMetrics } from '../../src/observability/metrics';
import { createServer, type RunningServer } from '../../src/server';
import { waitFor } from '../../../system-test/support/wait-for';

type Call<Req, Res> = (request: Req, metadata: Metadata, callback: (error: ServiceError | null, response: Res) => void) => unknown;

function invoke<Req, Res>(client: PetServiceClient, method: Call<Req, Res>, request: Req, metadata = new Metadata()): Promise<Res> {
  return new Promise((resolve, reject) =>
    method.call(client, request, metadata, (error, response) => (error ? reject(error) : resolve(response))),
  );
}

function metadataOf(...entries: Array<[string, string]>): Metadata {
  const metadata = new Metadata();
  for (const [key, value] of entries) metadata.add(key, value);
  return metadata;
}

async function expectStatus(promise: Promise<unknown>, code: Status, details: RegExp): Promise<ServiceError> {
  try {
    await promise;
  } catch (error) {
    expect((error as ServiceError).code, (error as ServiceError).details).to.equal(code);
    expect((error as ServiceError).details).to.match(details);
    return error as ServiceError;
  }
  expect.fail(`expected gRPC status ${Status[code]}`);
}

describe('pet service over gRPC (real server on port 0)', () => {
  let server: RunningServer;
  let client: PetServiceClient;

  beforeEach(async () => {
    server = await createServer({ host: '127.0.0.1', port: 0, repository: new MemoryPetRepository(), pageTokenSecret: 's' });
    client = new PetServiceClient(`127.0.0.1:${server.port}`, credentials.createInsecure());
  });

  afterEach(async () => {
    client.close();
    await server.shutdown();
  });

  const create = (name: string, categoryId = '1', status = PetStatus.PET_STATUS_UNSPECIFIED) =>
    invoke<CreatePetRequest, CreatePetResponse>(client, client.createPet, { name, categoryId, status });
  const list = (request: ListPetsRequest) => invoke<ListPetsRequest, ListPetsResponse>(client, client.listPets, request);
  const get = (id: string) => invoke<GetPetRequest, GetPetResponse>(client, client.getPet, { id });
  const createWith = (metadata: Metadata, name = 'Rex') =>
    invoke<CreatePetRequest, CreatePetResponse>(client, client.createPet, { name, categoryId: '1', status: 0 }, metadata);

  it('creates with status defaulting to available, and gets by id', async () => {
    const { pet } = await create('Rex', '9223372036854775807');
    expect(pet).to.deep.equal({ id: '1', name: 'Rex', categoryId: '9223372036854775807', status: PetStatus.PET_STATUS_AVAILABLE, etag: '"0"' });
    expect((await get('1')).pet).to.deep.equal(pet);
  });

  it('pages with an opaque token bound to the filter', async () => {
    for (let index = 0; index < 5; index += 1) await create(`p${index}`);
    const first = await list({ pageSize: 2, pageToken: '', status: 0 });
    expect(first.pets.map((pet) => pet.id)).to.deep.equal(['1', '2']);
    const second = await list({ pageSize: 3, pageToken: first.nextPageToken, status: 0 });
    expect(second.pets.map((pet) => pet.id)).to.deep.equal(['3', '4', '5']);
    expect(second.nextPageToken).to.equal('');
    await expectStatus(
      list({ pageSize: 2, pageToken: first.nextPageToken, status: PetStatus.PET_STATUS_SOLD }),
      Status.INVALID_ARGUMENT,
      /^page_token: /,
    );
  });

  it('defaults page_size 0 to 20', async () => {
    for (let index = 0; index < 21; index += 1) await create(`p${index}`);
    expect((await list({ pageSize: 0, pageToken: '', status: 0 })).pets).to.have.length(20);
  });

  const invalid: Array<[string, () => Promise<unknown>, string]> = [
    ['empty name', () => create(''), 'name'],
    ['NUL in the name', () => create('a\u0000b'), 'name'],
    ['101-character name', () => create('x'.repeat(101)), 'name'],
    ['zero category', () => create('a', '0'), 'category_id'],
    ['negative category', () => create('a', '-5'), 'category_id'],
    ['unknown status on create', () => create('a', '1', 9 as PetStatus), 'status'],
    ['page_size over 100', () => list({ pageSize: 101, pageToken: '', status: 0 }), 'page_size'],
    ['negative page_size', () => list({ pageSize: -1, pageToken: '', status: 0 }), 'page_size'],
    ['unknown status filter', () => list({ pageSize: 1, pageToken: '', status: 7 as PetStatus }), 'status'],
    ['garbage page token', () => list({ pageSize: 1, pageToken: '!!', status: 0 }), 'page_token'],
    ['id zero', () => get('0'), 'id'],
    ['two idempotency keys', () => createWith(metadataOf([IDEMPOTENCY_KEY_METADATA, 'a'], [IDEMPOTENCY_KEY_METADATA, 'b'])), 'idempotency-key'],
  ];
  for (const [what, run, field] of invalid) {
    it(`gives INVALID_ARGUMENT naming the field ${field} in a BadRequest for ${what}`, async () => {
      const error = await expectStatus(run(), Status.INVALID_ARGUMENT, new RegExp(`^${field}: `));
      const violation = fieldViolationOf(error.metadata);
      expect(violation?.field).to.equal(field);
      expect(error.details, 'the status message stays readable in gRPC tools').to.equal(`${field}: ${violation?.description}`);
    });
  }

  // Issue 17: invalid UTF-8 in a string field was decoded with U+FFFD in its place and stored.
  describe('string fields that are not valid UTF-8', () => {
    /** CreatePet with `name` as these bytes, exactly: field 1, length-delimited; category_id 1. */
    const createPetBytes = (name: Buffer) => Buffer.concat([Buffer.from([0x0a, name.length]), name, Buffer.from([0x10, 0x01])]);
    const sendRaw = (method: string, bytes: Buffer) =>
      new Promise<unknown>((resolve, reject) =>
        client.makeUnaryRequest(`/petstore.v1.PetService/${method}`, (value: Buffer) => value, (value: Buffer) => value, bytes, new Metadata(), (error, response) =>
          error ? reject(error) : resolve(response),
        ),
      );

    const cases: Array<[string, number[]]> = [
      ['a lone continuation byte', [0x61, 0x80]],
      ['a truncated sequence', [0x61, 0xc3]],
      ['an overlong encoding of /', [0xc0, 0xaf]],
      ['an encoded surrogate (CESU-8)', [0xed, 0xa0, 0x80]],
      ['0xFF', [0xff]],
    ];
    for (const [what, bytes] of cases) {
      it(`refuses CreatePet with ${what} in name: INVALID_ARGUMENT, nothing stored`, async () => {
        const error = await expectStatus(sendRaw('CreatePet', createPetBytes(Buffer.from(bytes))), Status.INVALID_ARGUMENT, /^request: a string field is not valid UTF-8$/);
        expect(fieldViolationOf(error.metadata)?.field).to.equal('request');
        expect((await list({ pageSize: 100, pageToken: '', status: 0 })).pets).to.deep.equal([]);
      });
    }

    it('refuses ListPets with a page_token that is not valid UTF-8', async () => {
      await expectStatus(sendRaw('ListPets', Buffer.from([0x12, 0x02, 0x61, 0xff])), Status.INVALID_ARGUMENT, /^request: a string field is not valid UTF-8$/);
    });

    it('stores valid multi-byte UTF-8, and a leading U+FEFF, exactly as sent', async () => {
      const name = '\ufeffCrème 🐶';
      await sendRaw('CreatePet', createPetBytes(Buffer.from(name, 'utf8')));
      expect((await get('1')).pet?.name).to.equal(name);
    });
  });

  it('sends the field violation as a standard google.rpc.Status in grpc-status-details-bin', async () => {
    const error = await expectStatus(create('a', '0'), Status.INVALID_ARGUMENT, /^category_id: /);
    const [bytes] = error.metadata.get(STATUS_DETAILS_METADATA);
    expect(bytes).to.be.instanceOf(Buffer);
    const status = RpcStatus.decode(bytes as Buffer);
    expect(status).to.include({ code: Status.INVALID_ARGUMENT, message: 'category_id: must be a positive int64' });
    expect(status.details.map((detail) => detail.typeUrl)).to.deep.equal(['type.googleapis.com/google.rpc.BadRequest']);
    expect(BadRequest.decode(status.details[0]!.value).fieldViolations).to.deep.equal([
      { field: 'category_id', description: 'must be a positive int64', reason: '', localizedMessage: undefined },
    ]);
  });

  it('names every invalid field in one BadRequest, one violation each in field order, the metadata\'s after the message\'s (issue 40)', async () => {
    const error = await expectStatus(
      createWith(metadataOf([IDEMPOTENCY_KEY_METADATA, 'has space'], [CALLER_ID_METADATA, 'c']), ''),
      Status.INVALID_ARGUMENT,
      /^name: /,
    );
    const status = RpcStatus.decode(error.metadata.get(STATUS_DETAILS_METADATA)[0] as Buffer);
    const fields = BadRequest.decode(status.details[0]!.value).fieldViolations.map((violation) => violation.field);
    expect(fields).to.deep.equal(['name', 'idempotency-key']);
    expect(fieldViolationsOf(error.metadata).map((violation) => violation.field)).to.deep.equal(fields);
    const both = await expectStatus(create('', '0'), Status.INVALID_ARGUMENT, /^name: .*; category_id: must be a positive int64$/);
    expect(fieldViolationsOf(both.metadata).map((violation) => violation.field)).to.deep.equal(['name', 'category_id']);
    const list3 = await expectStatus(list({ pageSize: 101, pageToken: '!!', status: 7 as PetStatus }), Status.INVALID_ARGUMENT, /^page_size: /);
    expect(fieldViolationsOf(list3.metadata).map((violation) => violation.field)).to.deep.equal(['page_size', 'status', 'page_token']);
    expect((await list({ pageSize: 100, pageToken: '', status: 0 })).pets, 'nothing stored').to.deep.equal([]);
  });

  it('names idempotency-key in the ALREADY_EXISTS of a key reused with another request', async () => {
    const key = (): Metadata => metadataOf([IDEMPOTENCY_KEY_METADATA, 'k'], [CALLER_ID_METADATA, 'caller']);
    await createWith(key(), 'Rex');
    const error = await expectStatus(createWith(key(), 'Max'), Status.ALREADY_EXISTS, /^idempotency-key: /);
    expect(fieldViolationOf(error.metadata)).to.deep.equal({ field: 'idempotency-key', description: 'already used with a different request' });
  });

  it('details a refused change so that createPetServiceClient\'s caller decodes it: refusedTransitionOf, currentEtagOf', async () => {
    const pets = createPetServiceClient(`127.0.0.1:${server.port}`, { transportOptions: { proxy: false } });
    try {
      const { pet } = await create('Rex');
      const change = (status: PetStatus, etag: string) =>
        pets.updatePet({ pet: { id: pet!.id, name: '', categoryId: '0', status, etag: '' }, updateMask: ['status'], etag });
      await change(PetStatus.PET_STATUS_SOLD, '"0"');
      const refused = await expectStatus(change(PetStatus.PET_STATUS_AVAILABLE, ''), Status.FAILED_PRECONDITION, /^status: cannot change from sold to available/);
      expect(refusedTransitionOf(refused.metadata)).to.deep.equal({ from: 'sold', to: 'available' });
      const stale = await expectStatus(change(PetStatus.PET_STATUS_AVAILABLE, '"0"'), Status.ABORTED, /^etag: /);
      expect(currentEtagOf(stale.metadata)).to.equal('"1"');
    } finally {
      pets.close();
    }
  });

  it('sends no status details with an error that names no field', async () => {
    const error = await expectStatus(get('42'), Status.NOT_FOUND, /42/);
    expect(error.metadata.get(STATUS_DETAILS_METADATA)).to.deep.equal([]);
  });

  it('answers the standard health check, and NOT_SERVING once shutdown starts', async () => {
    const HealthClient = makeGenericClientConstructor(healthService, 'Health');
    const health = new HealthClient(`127.0.0.1:${server.port}`, credentials.createInsecure()) as never as HealthStub;
    const check = (service: string) =>
      new Promise<string>((resolve, reject) =>
        health.check({ service }, (error, response) => (error ? reject(error) : resolve(response!.status))),
      );
    expect(await check('')).to.equal('SERVING');
    expect(await check(PET_SERVICE_NAME)).to.equal('SERVING');

    // A watch, because shutdown refuses new calls: only a call already open can hear the change.
    const watch = health.watch({ service: PET_SERVICE_NAME });
    const statuses = on(watch, 'data') as AsyncIterableIterator<[{ status: string }]>;
    expect((await statuses.next()).value[0].status).to.equal('SERVING');
    const stopping = server.shutdown();
    expect((await statuses.next()).value[0].status).to.equal('NOT_SERVING');
    watch.on('error', () => undefined);
    watch.cancel();
    expect(await stopping).to.deep.equal({ forced: false });
    health.close();
  });
});

interface HealthStub {
  check(request: { service: string }, callback: (error: ServiceError | null, response?: { status: string }) => void): void;
  watch(request: { service: string }): ClientReadableStream<{ status: string }>;
  close(): void;
}

type LogLine = Record<string, unknown>;

/** A logger whose JSON lines the test reads, and can wait for. */
function capturedLogs(level = 'info'): { logger: pino.Logger; lines: LogLine[]; next(matches: (line: LogLine) => boolean): Promise<LogLine> } {
  const lines: LogLine[] = [];
  const waiters: Array<{ matches: (line: LogLine) => boolean; resolve: (line: LogLine) => void }> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      const line = JSON.parse(chunk.toString()) as LogLine;
      lines.push(line);
      for (const waiter of waiters.filter(({ matches }) => matches(line))) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
      done();
    },
  });
  return {
    logger: pino({ level }, sink),
    lines,
    next: (matches) => new Promise((resolve) => waiters.push({ matches, resolve })),
  };
}

describe("a read's cancellation signal", () => {
  it('is aborted only while its read runs: a call answered, its stream then closed, leaves it untouched', async () => {
    // grpc-js reports every call cancelled once its stream closes, answered or not; an abort then
    // built an error with its stack for every call (docs/performance.md).
    const signals: AbortSignal[] = [];
    const memory = new MemoryPetRepository();
    const repository = Object.assign(Object.create(memory) as MemoryPetRepository, {
      list: (query: Parameters<MemoryPetRepository['list']>[0], signal: AbortSignal) => {
        signals.push(signal);
        return memory.list(query);
      },
      get: (id: bigint, signal: AbortSignal) => {
        signals.push(signal);
        return memory.get(id);
      },
    });
    const server = await createServer({ host: '127.0.0.1', port: 0, repository, pageTokenSecret: 's' });
    const client = new PetServiceClient(`127.0.0.1:${server.port}`, credentials.createInsecure());
    try {
      await invoke<ListPetsRequest, ListPetsResponse>(client, client.listPets, { pageSize: 1, pageToken: '', status: 0 });
      await invoke<GetPetRequest, GetPetResponse>(client, client.getPet, { id: '1' }).catch(() => undefined);
    } finally {
      client.close();
      // Every stream closed, and what grpc-js does on a close done, once the server has stopped.
      await server.shutdown();
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(signals).to.have.length(2);
    expect(signals.map((signal) => signal.aborted)).to.deep.equal([false, false]);
  });
});

describe('pet service shutdown', () => {
  it('finishes in-flight calls, refuses new ones, then closes the store', async () => {
    const gate: Array<() => void> = [];
    let reached: () => void = () => undefined;
    const allReached = new Promise<void>((resolve) => (reached = resolve));
    let closed = false;
    const memory = new MemoryPetRepository();
    const repository = Object.assign(Object.create(memory) as MemoryPetRepository, {
      list: async (query: Parameters<MemoryPetRepository['list']>[0]) => {
        await new Promise<void>((resolve) => {
          gate.push(resolve);
          if (gate.length === 10) reached();
        });
        return memory.list(query);
      },
      close: async () => {
        closed = true;
      },
    });
    const server = await createServer({ host: '127.0.0.1', port: 0, repository, pageTokenSecret: 's' });
    const client = new PetServiceClient(`127.0.0.1:${server.port}`, credentials.createInsecure());
    const list = () =>
      invoke<ListPetsRequest, ListPetsResponse>(client, client.listPets, { pageSize: 1, pageToken: '', status: 0 }).then(
        () => 'OK',
        (error: ServiceError) => Status[error.code],
      );
    try {
      const inFlight = Array.from({ length: 10 }, list);
      await allReached;
      const stopped = server.shutdown();
      expect(await list()).to.equal('UNAVAILABLE');
      expect(closed).to.equal(false);
      for (const release of gate) release();
      expect(await Promise.all(inFlight)).to.deep.equal(Array(10).fill('OK'));
      await stopped;
      expect(closed).to.equal(true);
    } finally {
      client.close();
    }
  });

  it('cancels calls that outlive the shutdown timeout, says it had to, and ends them CANCELLED when the store closes under them', async () => {
    let reached: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (reached = resolve));
    let failHeld: (error: Error) => void = () => undefined;
    const repository = Object.assign(Object.create(new MemoryPetRepository()) as MemoryPetRepository, {
      list: () => {
        reached();
        return new Promise<never>((_, reject) => (failHeld = reject));
      },
      // As the MongoDB driver does: closing fails the operations still running.
      close: async () => failHeld(new Error('client was closed')),
    });
    const logs = capturedLogs();
    const logged = logs.next((line) => line.method === 'ListPets');
    const server = await createServer({ host: '127.0.0.1', port: 0, repository, pageTokenSecret: 's', shutdownTimeoutMs: 100, logger: logs.logger });
    const client = new PetServiceClient(`127.0.0.1:${server.port}`, credentials.createInsecure());
    try {
      const call = invoke<ListPetsRequest, ListPetsResponse>(client, client.listPets, { pageSize: 1, pageToken: '', status: 0 }).then(
        () => 'OK',
        (error: ServiceError) => Status[error.code],
      );
      await held;
      expect(await server.shutdown()).to.deep.equal({ forced: true });
      expect(await call).to.not.equal('OK');
      expect(await logged).to.include({ msg: 'grpc call', code: 'CANCELLED' });
      expect(logs.lines.filter((line) => (line.level as number) >= 50)).to.deep.equal([]);
    } finally {
      client.close();
    }
  });

  // Issue 13, point 7: CreatePet calls the gateway had given up on logged INTERNAL
  // MongoClientClosedError, the store closed under their still-running operations.
  it('closes the store only after the operation of a call its client gave up on has finished, and logs that call CANCELLED', async () => {
    let reached: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (reached = resolve));
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let closed = false;
    const memory = new MemoryPetRepository();
    const repository = Object.assign(Object.create(memory) as MemoryPetRepository, {
      create: async (pet: Parameters<MemoryPetRepository['create']>[0]) => {
        reached();
        await gate;
        if (closed) throw new Error('client was closed');
        return memory.create(pet);
      },
      close: async () => {
        closed = true;
      },
    });
    const logs = capturedLogs();
    const server = await createServer({ host: '127.0.0.1', port: 0, repository, pageTokenSecret: 's', logger: logs.logger });
    const client = new PetServiceClient(`127.0.0.1:${server.port}`, credentials.createInsecure());
    try {
      const logged = logs.next((line) => line.method === 'CreatePet');
      let outcome: Promise<string> = Promise.resolve('not sent');
      const call = await new Promise<{ cancel(): void }>((resolve) => {
        outcome = new Promise((settle) => {
          resolve(client.createPet({ name: 'Rex', categoryId: '1', status: 0 }, (error) => settle(error ? Status[error.code]! : 'OK')));
        });
      });
      await held;
      call.cancel();
      expect(await outcome).to.equal('CANCELLED');

      const waiting = logs.next((line) => line.msg === 'calls finished; waiting for their store operations');
      const stopped = server.shutdown();
      const first = await Promise.race([waiting.then(() => 'waiting for the store'), stopped.then(() => 'shut down')]);
      expect(first).to.equal('waiting for the store');
      expect(closed).to.equal(false);
      release();
      expect(await stopped).to.deep.equal({ forced: false });
      expect(closed).to.equal(true);
      expect(await logged).to.include({ msg: 'grpc call', code: 'CANCELLED' });
      expect(logs.lines.filter((line) => (line.level as number) >= 50)).to.deep.equal([]);
    } finally {
      client.close();
    }
  });
});

describe('pet service call log', () => {
  /** A clock that moves `stepNs` each time it is read: a call lasts one step. */
  const steppingClock = (stepNs: bigint) => {
    let now = 0n;
    return () => (now += stepNs);
  };
  const MS = 1_000_000n;

  async function callsLogged(options: { level: string; slowCallMs?: number; callMs: bigint }): Promise<{ lines: LogLine[]; counted: string }> {
    const logs = capturedLogs(options.level);
    const metrics = createMetrics();
    const server = await createServer({
      metrics,
      host: '127.0.0.1',
      port: 0,
      repository: new MemoryPetRepository(),
      pageTokenSecret: 's',
      logger: logs.logger,
      slowCallMs: options.slowCallMs,
      clock: steppingClock(options.callMs * MS),
    });
    const client = new PetServiceClient(`127.0.0.1:${server.port}`, credentials.createInsecure());
    try {
      await invoke<ListPetsRequest, ListPetsResponse>(client, client.listPets, { pageSize: 1, pageToken: '', status: 0 }, metadataOf(['x-request-id', 'list-1']));
      await invoke<GetPetRequest, GetPetResponse>(client, client.getPet, { id: '7' }, metadataOf(['x-request-id', 'get-7'])).catch(() => undefined);
      const counted = (await metrics.registry.getSingleMetricAsString('grpc_server_handled_total')).trim();
      return { lines: logs.lines.filter((line) => line.msg === 'grpc call'), counted };
    } finally {
      client.close();
      await server.shutdown();
    }
  }
  const summary = (lines: LogLine[]) => lines.map(({ level, method, code, duration, requestId }) => ({ level, method, code, duration, requestId }));
  const COUNTED = ['grpc_server_handled_total{method="ListPets",code="OK"} 1', 'grpc_server_handled_total{method="GetPet",code="NOT_FOUND"} 1'];

  it('at info, leaves out a fast successful call but logs a failed one, and counts both', async () => {
    const { lines, counted } = await callsLogged({ level: 'info', callMs: 1n });
    expect(summary(lines)).to.deep.equal([{ level: 30, method: 'GetPet', code: 'NOT_FOUND', duration: 1, requestId: 'get-7' }]);
    for (const line of COUNTED) expect(counted).to.include(line);
  });

  it('logs a successful call at info once it takes LOG_SLOW_CALL_MS (100 by default)', async () => {
    const { lines } = await callsLogged({ level: 'info', callMs: 100n });
    expect(summary(lines)).to.deep.equal([
      { level: 30, method: 'ListPets', code: 'OK', duration: 100, requestId: 'list-1' },
      { level: 30, method: 'GetPet', code: 'NOT_FOUND', duration: 100, requestId: 'get-7' },
    ]);
    expect(summary((await callsLogged({ level: 'info', callMs: 99n })).lines).map((line) => line.method)).to.deep.equal(['GetPet']);
  });

  it('logs every call at debug, and every call at info with LOG_SLOW_CALL_MS=0', async () => {
    expect(summary((await callsLogged({ level: 'debug', callMs: 1n })).lines)).to.deep.equal([
      { level: 20, method: 'ListPets', code: 'OK', duration: 1, requestId: 'list-1' },
      { level: 30, method: 'GetPet', code: 'NOT_FOUND', duration: 1, requestId: 'get-7' },
    ]);
    expect(summary((await callsLogged({ level: 'info', slowCallMs: 0, callMs: 1n })).lines).map((line) => [line.level, line.method])).to.deep.equal([
      [30, 'ListPets'],
      [30, 'GetPet'],
    ]);
  });

  it('logs a sane x-request-id, and drops one that is too long or has unsafe characters', async () => {
    const logs = capturedLogs('debug');
    const server = await createServer({ host: '127.0.0.1', port: 0, repository: new MemoryPetRepository(), pageTokenSecret: 's', logger: logs.logger });
    const client = new PetServiceClient(`127.0.0.1:${server.port}`, credentials.createInsecure());
    try {
      for (const id of ['trace-4f2a:9c1e', 'a'.repeat(129), '<script>', 'has space']) {
        await invoke<ListPetsRequest, ListPetsResponse>(client, client.listPets, { pageSize: 1, pageToken: '', status: 0 }, metadataOf(['x-request-id', id]));
      }
      const calls = logs.lines.filter((line) => line.msg === 'grpc call');
      expect(calls.map((line) => line.requestId)).to.deep.equal(['trace-4f2a:9c1e', undefined, undefined, undefined]);
    } finally {
      client.close();
      await server.shutdown();
    }
  });
});

describe('pet service write bound', () => {
  // Issue 47: changes and deletes are writes, bounded with creates (docs/mongodb.md#slow-store-the-read-and-write-bounds).
  it('holds UpdatePet and DeletePet to the write bound with CreatePet: past it they are RESOURCE_EXHAUSTED and reach no store', async () => {
    const reached: string[] = [];
    let holdCreates = false;
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    class HeldCreates extends MemoryPetRepository {
      override async create(...args: Parameters<MemoryPetRepository['create']>) {
        reached.push('create');
        if (holdCreates) await held;
        return super.create(...args);
      }
      override async update(...args: Parameters<MemoryPetRepository['update']>) {
        reached.push('update');
        return super.update(...args);
      }
      override async delete(...args: Parameters<MemoryPetRepository['delete']>) {
        reached.push('delete');
        return super.delete(...args);
      }
    }
    const server = await createServer({ host: '127.0.0.1', port: 0, repository: new HeldCreates(), pageTokenSecret: 's', maxConcurrentWrites: 1, maxQueuedWrites: 0 });
    const client = new PetServiceClient(`127.0.0.1:${server.port}`, credentials.createInsecure());
    const update = () =>
      invoke<UpdatePetRequest, UpdatePetResponse>(client, client.updatePet, {
        pet: { id: '1', name: 'Max', categoryId: '0', status: 0, etag: '' },
        updateMask: ['name'],
        etag: '',
      });
    const remove = () => invoke<DeletePetRequest, DeletePetResponse>(client, client.deletePet, { id: '1', etag: '' });
    try {
      await invoke<CreatePetRequest, CreatePetResponse>(client, client.createPet, { name: 'Rex', categoryId: '1', status: 0 });
      holdCreates = true;
      const creating = invoke<CreatePetRequest, CreatePetResponse>(client, client.createPet, { name: 'Held', categoryId: '1', status: 0 });
      await waitFor(() => reached.length === 2, 5000);
      await expectStatus(update(), Status.RESOURCE_EXHAUSTED, /./);
      await expectStatus(remove(), Status.RESOURCE_EXHAUSTED, /./);
      expect(reached, 'refused before the store').to.deep.equal(['create', 'create']);
      release();
      await creating;
      expect((await update()).pet).to.include({ id: '1', name: 'Max', etag: '"1"' });
      expect(await remove()).to.deep.equal({});
      expect(reached).to.deep.equal(['create', 'create', 'update', 'delete']);
    } finally {
      release();
      client.close();
      await server.shutdown();
    }
  });
});

describe('pet service connection age', () => {
  // A client connection older than the age is asked to go away (GOAWAY): the client reconnects and
  // resolves the name again, so replicas added after it first resolved get calls too.
  it('asks a client connection to go away at its maximum age, and the client reconnects without a failed call', async () => {
    const server = await createServer({ host: '127.0.0.1', port: 0, repository: new MemoryPetRepository(), pageTokenSecret: 's', maxConnectionAgeMs: 300 });
    const client = new PetServiceClient(`127.0.0.1:${server.port}`, credentials.createInsecure());
    const list = () => invoke<ListPetsRequest, ListPetsResponse>(client, client.listPets, { pageSize: 1, pageToken: '', status: 0 });
    try {
      await list();
      const channel = client.getChannel();
      expect(channel.getConnectivityState(false)).to.equal(connectivityState.READY);
      // Resolves when the state leaves READY; errs if it has not within 5 s.
      await new Promise<void>((resolve, reject) =>
        channel.watchConnectivityState(connectivityState.READY, Date.now() + 5000, (error) => (error ? reject(error) : resolve())),
      );
      expect(await list()).to.deep.equal({ pets: [], nextPageToken: '' });
    } finally {
      client.close();
      await server.shutdown();
    }
  });
});
