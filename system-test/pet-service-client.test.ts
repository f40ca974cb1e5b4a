import { credentials, Metadata, status as Status, type ServiceError } from '@grpc/grpc-js';
import {
  callMetadata,
  CreatePetResponse,
  createPetServiceClient,
  DEFAULT_KEEPALIVE,
  defaultTransportOptions,
  GetPetResponse,
  ListPetsResponse,
  MIN_RESOLUTION_INTERVAL_MS,
  PetServiceClient,
  type PetServiceMethod,
  type PromisePetServiceClient,
  READ_RETRY_BACKOFF_MS,
} from '@petstore/proto';
import { expect } from 'chai';
import type pino from 'pino';
import { DEFAULT_MAX_CONNECTION_AGE_MS } from '../pet-service/src/config';
import { createServer, type RunningServer } from '../pet-service/src/server';
import { MemoryPetRepository } from '../pet-service/src/store/memory-pet-repository';
import { capturedLogs } from './support/captured-logs';
import { waitFor } from './support/wait-for';
import { HeldReadsRepository } from './support/held-reads';
import { createMetrics as createPetServiceMetrics } from '../pet-service/src/observability/metrics';
import type { PetServiceError } from '../pet-service/src/pets/pet-service-error';
import { addFakeDnsName } from './support/fake-dns-preload';
import { startScriptedPetService, type ScriptedPetService } from './support/scripted-pet-service';
import { type RawAnswer, startRawGrpcServer } from './support/raw-grpc-server';
import { startTcpProxy } from '../proto/test/integration/transport/support/tcp-proxy';

const LIST = { pageSize: 1, pageToken: '', status: 0 };
const PET = { id: '1', name: 'Rex', categoryId: '1', status: 1 };

/** The gRPC status a call failed with (fails the test if it succeeded). */
async function failure(call: Promise<unknown>): Promise<Status> {
  try {
    await call;
  } catch (error) {
    return (error as ServiceError).code;
  }
  return expect.fail('the call succeeded');
}

/** What a failed call's error says: its message, code, details and metadata (but the server's `date`). */
async function errorOf(call: Promise<unknown>): Promise<{ message: string; code: Status; details: string; metadata: Record<string, unknown> }> {
  try {
    await call;
  } catch (error) {
    const { message, code, details, metadata } = error as ServiceError;
    expect(error).to.be.an.instanceOf(Error);
    const sent = metadata.getMap();
    delete sent.date;
    return { message, code, details, metadata: sent };
  }
  return expect.fail('the call succeeded');
}

interface PetServiceOptions {
  host?: string;
  port?: number;
  repository?: MemoryPetRepository;
  logger?: pino.Logger;
  maxConnectionAgeMs?: number;
}

/** A real pet service on a loopback address, the memory store its only dependency. */
function petService(options: PetServiceOptions = {}): Promise<RunningServer> {
  return createServer({
    host: options.host ?? '127.0.0.1',
    port: options.port ?? 0,
    repository: options.repository ?? new MemoryPetRepository(),
    pageTokenSecret: 's',
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    ...(options.maxConnectionAgeMs === undefined ? {} : { maxConnectionAgeMs: options.maxConnectionAgeMs }),
  });
}

/**
 * Replicas on one port, each on its own loopback address, as behind a headless Service; each
 * store holds a pet 1 named after its replica, so a GetPet of id 1 tells which one answered.
 */
async function replicasOnOnePort(names: readonly string[], options: PetServiceOptions = {}): Promise<RunningServer[]> {
  const replicas: RunningServer[] = [];
  for (const [index, name] of names.entries()) {
    const repository = new MemoryPetRepository();
    await repository.create({ name, categoryId: 1n, status: 'available' });
    replicas.push(await petService({ ...options, host: `127.0.0.${index + 1}`, port: replicas[0]?.port ?? 0, repository }));
  }
  return replicas;
}

describe('createPetServiceClient (@petstore/proto) against real gRPC servers on port 0', function () {
  this.timeout(30_000);
  const cleanups: Array<() => unknown> = [];
  const client = (target: string, options: Parameters<typeof createPetServiceClient>[1] = {}): PromisePetServiceClient => {
    const made = createPetServiceClient(target, options);
    cleanups.push(() => made.close());
    return made;
  };

  /** grpc-js's generated client, the reference the errors are compared with. */
  const generatedClient = (target: string): PetServiceClient => {
    const made = new PetServiceClient(target, credentials.createInsecure());
    cleanups.push(() => made.close());
    return made;
  };

  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('gives every call its deadline: a call the pet service holds ends DEADLINE_EXCEEDED', async () => {
    const repository = new HeldReadsRepository();
    const server = await petService({ repository });
    cleanups.push(() => server.shutdown(), () => repository.release());
    const pets = client(`127.0.0.1:${server.port}`, { deadlineMs: 300 });

    const started = Date.now();
    expect(await failure(pets.getPet({ id: '1' }))).to.equal(Status.DEADLINE_EXCEEDED);
    expect(Date.now() - started).to.be.at.least(290);
  });

  describe('on UNAVAILABLE from a replica (a scripted server: the real one cannot fail on cue)', () => {
    let scripted: ScriptedPetService;

    beforeEach(async () => {
      scripted = await startScriptedPetService({
        // Two failures, then an answer: the read succeeds on its last allowed attempt.
        getPet: (attempt) => (attempt <= READ_RETRY_BACKOFF_MS.length ? { fail: Status.UNAVAILABLE } : { pet: PET }),
        listPets: () => ({ fail: Status.UNAVAILABLE }),
        createPet: () => ({ fail: Status.UNAVAILABLE }),
      });
      cleanups.push(() => scripted.close());
    });

    it('retries reads per the policy, at most twice, and never a create', async () => {
      const pets = client(`127.0.0.1:${scripted.port}`);

      expect((await pets.getPet({ id: '1' })).pet?.name).to.equal('Rex');
      expect(scripted.calls.getPet, 'GetPet attempts').to.equal(1 + READ_RETRY_BACKOFF_MS.length);

      expect(await failure(pets.listPets(LIST))).to.equal(Status.UNAVAILABLE);
      expect(scripted.calls.listPets, 'ListPets attempts').to.equal(1 + READ_RETRY_BACKOFF_MS.length);

      expect(await failure(pets.createPet({ name: 'Rex', categoryId: '1', status: 0 }))).to.equal(Status.UNAVAILABLE);
      expect(scripted.calls.createPet, 'CreatePet attempts').to.equal(1);
    });

    it('retries nothing with retryReads: false', async () => {
      const pets = client(`127.0.0.1:${scripted.port}`, { retryReads: false });
      expect(await failure(pets.getPet({ id: '1' }))).to.equal(Status.UNAVAILABLE);
      expect(scripted.calls.getPet).to.equal(1);
    });
  });

  describe('when the pet service says a retry would not help (overload)', () => {
    it('never retries a read whose answer pushes back (grpc-retry-pushback-ms negative or not a number), nor RESOURCE_EXHAUSTED', async () => {
      const scripted = await startScriptedPetService({
        getPet: () => ({ fail: Status.UNAVAILABLE, pushbackMs: '-1' }),
        listPets: (attempt) => (attempt === 1 ? { fail: Status.UNAVAILABLE, pushbackMs: 'soon' } : { fail: Status.RESOURCE_EXHAUSTED }),
      });
      cleanups.push(() => scripted.close());
      const pets = client(`127.0.0.1:${scripted.port}`);
      expect(await failure(pets.getPet({ id: '1' }))).to.equal(Status.UNAVAILABLE);
      expect(await failure(pets.listPets(LIST))).to.equal(Status.UNAVAILABLE);
      expect(await failure(pets.listPets(LIST))).to.equal(Status.RESOURCE_EXHAUSTED);
      expect(scripted.calls, 'one attempt each').to.deep.include({ getPet: 1, listPets: 2 });
    });

    it('retries after the pushback it was given, when that fits in the deadline', async () => {
      const scripted = await startScriptedPetService({
        getPet: (attempt) => (attempt === 1 ? { fail: Status.UNAVAILABLE, pushbackMs: '300' } : { pet: PET }),
        listPets: () => ({ fail: Status.UNAVAILABLE, pushbackMs: '5000' }),
      });
      cleanups.push(() => scripted.close());
      const pets = client(`127.0.0.1:${scripted.port}`, { deadlineMs: 2000 });
      const started = Date.now();
      expect((await pets.getPet({ id: '1' })).pet?.name).to.equal('Rex');
      expect(Date.now() - started, 'waited the pushback, not the 20–60 ms backoff').to.be.at.least(300);
      expect(await failure(pets.listPets(LIST)), 'a pushback past the deadline: no retry').to.equal(Status.UNAVAILABLE);
      expect(scripted.calls).to.deep.include({ getPet: 2, listPets: 1 });
    });
  });

  describe('cancellation through the call\'s signal', () => {
    it('cancels the call: the pet service stops the read, logs and counts it CANCELLED, and nothing is retried', async () => {
      const repository = new HeldReadsRepository();
      const metrics = createPetServiceMetrics();
      const { logger, lines } = capturedLogs('info');
      const server = await createServer({ host: '127.0.0.1', port: 0, repository, pageTokenSecret: 's', logger, metrics });
      cleanups.push(() => server.shutdown());
      const pets = client(`127.0.0.1:${server.port}`, { deadlineMs: 10_000 });
      const controller = new AbortController();
      const read = failure(pets.getPet({ id: '1' }, undefined, { signal: controller.signal }));
      await waitFor(() => repository.started === 1, 5000);
      controller.abort();
      expect(await read).to.equal(Status.CANCELLED);
      await waitFor(() => repository.aborted.length === 1, 5000);
      expect((repository.aborted[0] as PetServiceError).code, 'the store read was aborted').to.equal(Status.CANCELLED);
      expect(repository.started, 'no retry').to.equal(1);
      await waitFor(() => lines.some((line) => line.method === 'GetPet'), 5000);
      expect(lines.find((line) => line.method === 'GetPet')).to.include({ code: 'CANCELLED', msg: 'grpc call' });
      const counted = async (name: string) => (await metrics.registry.getSingleMetric(name)!.get()).values.map(({ labels, value }) => ({ ...labels, value }));
      expect(await counted('grpc_server_handled_total')).to.deep.include({ method: 'GetPet', code: 'CANCELLED', value: 1 });
      expect(await counted('pet_store_operations_total')).to.deep.include({ operation: 'get', outcome: 'cancelled', value: 1 });
    });

    it('sends nothing for a signal already aborted, and stops waiting between retries when it aborts', async () => {
      const scripted = await startScriptedPetService({ getPet: () => ({ fail: Status.UNAVAILABLE, pushbackMs: '1500' }) });
      cleanups.push(() => scripted.close());
      const pets = client(`127.0.0.1:${scripted.port}`, { deadlineMs: 10_000 });
      expect(await failure(pets.getPet({ id: '1' }, undefined, { signal: AbortSignal.abort() }))).to.equal(Status.CANCELLED);
      expect(scripted.calls.getPet).to.equal(0);

      const controller = new AbortController();
      const read = failure(pets.getPet({ id: '1' }, undefined, { signal: controller.signal }));
      await waitFor(() => scripted.calls.getPet === 1, 5000);
      controller.abort();
      expect(await read).to.equal(Status.CANCELLED);
      expect(scripted.calls.getPet, 'the retry the pushback allowed was never sent').to.equal(1);
    });
  });

  it('spreads calls round_robin over every address of a dns:/// name', async () => {
    const replicas = await replicasOnOnePort(['first', 'second']);
    for (const replica of replicas) cleanups.push(() => replica.shutdown());
    cleanups.push(addFakeDnsName('pets.test', ['127.0.0.1', '127.0.0.2']));
    const pets = client(`dns:///pets.test:${replicas[0]!.port}`);
    const nameOfPet1 = async () => (await pets.getPet({ id: '1' })).pet!.name;

    // The channel is READY with its first connection; the second joins a moment later.
    const seen = new Set<string>();
    for (let call = 0; call < 50 && seen.size < 2; call += 1) seen.add(await nameOfPet1());
    expect([...seen], 'replicas reached').to.have.members(['first', 'second']);
    const names: string[] = [];
    for (let call = 0; call < 20; call += 1) names.push(await nameOfPet1());
    expect(names.filter((name) => name === 'first'), names.join(' ')).to.have.length(10);
    for (let call = 1; call < names.length; call += 1) expect(names[call], 'consecutive calls').to.not.equal(names[call - 1]);
  });

  describe('a replica added to the name, or removed from it', () => {
    // Scaled down: connections recycled every second (±10%), names resolved at most every 100 ms.
    const AGE_MS = 1000;
    const RESOLUTION_MS = 100;
    /** The connection age with its jitter, one resolution interval, and room for a loaded machine. */
    const BOUND_MS = AGE_MS * 1.1 + RESOLUTION_MS + 2000;

    it('keeps production defaults within 60 s: connection age and resolution interval leave room for DNS caching', () => {
      // Kubernetes' DNS caches a headless Service's records for 5 s by default (CoreDNS ttl), and
      // endpoints take a few seconds to change: 15 s is left for both.
      expect(DEFAULT_MAX_CONNECTION_AGE_MS * 1.1 + MIN_RESOLUTION_INTERVAL_MS).to.be.at.most(45_000);
      expect(defaultTransportOptions().minResolutionIntervalMs).to.equal(MIN_RESOLUTION_INTERVAL_MS);
    });

    it('calls a new replica within a connection age, stops calling a removed one within the same bound, and fails no read or create', async () => {
      const replicas = await replicasOnOnePort(['first', 'second', 'third'], { maxConnectionAgeMs: AGE_MS });
      for (const replica of replicas) cleanups.push(() => replica.shutdown());
      cleanups.push(addFakeDnsName('pets.test', ['127.0.0.1', '127.0.0.2']));
      const pets = client(`dns:///pets.test:${replicas[0]!.port}`, { transportOptions: { minResolutionIntervalMs: RESOLUTION_MS } });
      /** Calls one after another until `done` holds of the replica that answered; every call must succeed. */
      const callUntil = async (done: (name: string) => boolean): Promise<Set<string>> => {
        const seen = new Set<string>();
        for (const started = Date.now(); Date.now() - started < BOUND_MS; ) {
          // A create too: never retried on UNAVAILABLE, it must not meet a recycled connection's refusal.
          await pets.createPet({ name: 'Rex', categoryId: '1', status: 0 });
          const name = (await pets.getPet({ id: '1' })).pet!.name;
          seen.add(name);
          if (done(name)) return seen;
        }
        return expect.fail(`not within ${BOUND_MS} ms; answered by ${[...seen].join(', ')}`);
      };

      const before = await callUntil((name) => name === 'second');
      // A connection that fails or goes away asks for a new resolution, which may be held back by
      // the resolution backoff (at most the client's 1 s longest reconnect backoff). Calls go on for
      // three times that before the name changes, so that only a recycled connection (or the
      // periodic refresh) can make the transport resolve the name again.
      for (const settling = Date.now(); Date.now() - settling < 3000; ) before.add((await pets.getPet({ id: '1' })).pet!.name);
      expect([...before]).to.have.members(['first', 'second']);

      cleanups.push(addFakeDnsName('pets.test', ['127.0.0.1', '127.0.0.2', '127.0.0.3']));
      await callUntil((name) => name === 'third');

      cleanups.push(addFakeDnsName('pets.test', ['127.0.0.2', '127.0.0.3']));
      // Once every connection to the first has been recycled, it answers nothing more: 30 calls in a
      // row (three per replica left and round) without it.
      let withoutFirst = 0;
      await callUntil((name) => (withoutFirst = name === 'first' ? 0 : withoutFirst + 1) >= 30);
      const after = new Set<string>();
      for (let call = 0; call < 30; call += 1) after.add((await pets.getPet({ id: '1' })).pet!.name);
      expect([...after]).to.have.members(['second', 'third']);
    });
  });

  describe('a unary answer as grpc-js checks it (a server on node:http2: no gRPC library answers so)', () => {
    const PET_RESPONSE = GetPetResponse.encode({ pet: PET }).finish();
    const ANSWERS: ReadonlyArray<readonly [string, RawAnswer]> = [
      ['a status in the headers alone (trailers-only)', { headers: { 'grpc-status': '5', 'grpc-message': 'no such pet', 'x-extra': 'yes' } }],
      ['a status and metadata in the trailers', { headers: { 'x-initial': 'a' }, trailers: { 'grpc-status': '9', 'grpc-message': 'not now', 'x-extra': 'yes' } }],
      ['OK without a response', { trailers: { 'grpc-status': '0' } }],
      ['OK with bytes that are no GetPetResponse', { messages: [Buffer.from([0xff, 0xff, 0xff])], trailers: { 'grpc-status': '0' } }],
    ];

    for (const [name, answer] of ANSWERS) {
      it(`fails as grpc-js's generated client does on ${name}: same message, code, details and metadata`, async () => {
        const server = await startRawGrpcServer(answer);
        cleanups.push(() => server.close());
        const pets = client(`127.0.0.1:${server.port}`);
        const ours = await errorOf(pets.getPet({ id: '1' }));
        const reference = generatedClient(`127.0.0.1:${server.port}`);
        const generated = await errorOf(
          new Promise((resolve, reject) => reference.getPet({ id: '1' }, new Metadata(), { deadline: Date.now() + 2000 }, (error, response) => (error ? reject(error) : resolve(response)))),
        );
        expect(ours).to.deep.equal(generated);
        expect(ours.code, 'not OK').to.not.equal(Status.OK);
      });
    }

    it('fails a request that cannot be encoded INTERNAL, as grpc-js does, and sends nothing', async () => {
      const server = await startRawGrpcServer({ messages: [PET_RESPONSE], trailers: { 'grpc-status': '0' } });
      cleanups.push(() => server.close());
      const pets = client(`127.0.0.1:${server.port}`);
      const ours = await errorOf(pets.getPet({ id: 'not a number' }));
      expect(ours).to.include({ code: Status.INTERNAL });
      expect(ours.details).to.match(/^Request message serialization failure: /);
      expect(server.calls).to.equal(0);
      const reference = generatedClient(`127.0.0.1:${server.port}`);
      const generated = await errorOf(
        new Promise((resolve, reject) => reference.getPet({ id: 'not a number' }, new Metadata(), { deadline: Date.now() + 2000 }, (error, response) => (error ? reject(error) : resolve(response)))),
      );
      expect(ours).to.deep.equal(generated);
    });

    it('fails a call answered twice UNIMPLEMENTED as the second answer arrives, where the generated client waits out the deadline', async () => {
      const server = await startRawGrpcServer({ messages: [PET_RESPONSE, PET_RESPONSE], trailers: { 'grpc-status': '0' } });
      cleanups.push(() => server.close());
      const pets = client(`127.0.0.1:${server.port}`, { deadlineMs: 10_000 });
      const started = Date.now();
      expect(await errorOf(pets.getPet({ id: '1' }))).to.deep.include({ code: Status.UNIMPLEMENTED, details: 'Too many responses received' });
      expect(Date.now() - started, 'long before the deadline').to.be.below(5000);
    });

    it('answers the response as sent', async () => {
      const server = await startRawGrpcServer({ messages: [PET_RESPONSE], trailers: { 'grpc-status': '0' } });
      cleanups.push(() => server.close());
      const pets = client(`127.0.0.1:${server.port}`);
      expect(await pets.getPet({ id: '1' })).to.deep.equal({ pet: PET });
      expect(await pets.raw.getPet({ id: '1' })).to.deep.equal(Buffer.from(PET_RESPONSE));
    });
  });

  describe('raw: the same calls answering the response bytes', () => {
    it('answers the bytes the pet service sent, which decode to what the decoding calls answer', async () => {
      const repository = new MemoryPetRepository();
      for (const name of ['Rex', 'Nala', 'Émile "the cat"']) await repository.create({ name, categoryId: 9_223_372_036_854_775_807n, status: 'available' });
      const server = await petService({ repository });
      cleanups.push(() => server.shutdown());
      const pets = client(`127.0.0.1:${server.port}`);
      const page = { pageSize: 2, pageToken: '', status: 0 };

      const listed = await pets.raw.listPets(page);
      expect(listed).to.be.an.instanceOf(Buffer);
      const decoded = await pets.listPets(page);
      expect(ListPetsResponse.decode(listed)).to.deep.equal(decoded);
      expect(Buffer.from(ListPetsResponse.encode(decoded).finish()), 'byte for byte').to.deep.equal(listed);
      expect(decoded.pets.map((pet) => pet.name)).to.deep.equal(['Rex', 'Nala']);
      expect(GetPetResponse.decode(await pets.raw.getPet({ id: decoded.pets[1]!.id }))).to.deep.equal(await pets.getPet({ id: decoded.pets[1]!.id }));

      const create = () => pets.raw.createPet({ name: 'Kit', categoryId: '1', status: 0 }, callMetadata({ idempotencyKey: 'raw-1' }));
      const first = await create();
      expect(first.replayed).to.equal(false);
      const again = await create();
      expect(again.replayed).to.equal(true);
      expect(CreatePetResponse.decode(again.bytes)).to.deep.equal(CreatePetResponse.decode(first.bytes));
      expect(CreatePetResponse.decode(first.bytes).pet?.name).to.equal('Kit');
    });

    it('keeps the deadline and the read retries, and never retries a create', async () => {
      const scripted = await startScriptedPetService({
        getPet: (attempt) => (attempt <= READ_RETRY_BACKOFF_MS.length ? { fail: Status.UNAVAILABLE } : { pet: PET }),
        createPet: () => ({ fail: Status.UNAVAILABLE }),
      });
      cleanups.push(() => scripted.close());
      const pets = client(`127.0.0.1:${scripted.port}`);
      expect(GetPetResponse.decode(await pets.raw.getPet({ id: '1' }))).to.deep.equal({ pet: PET });
      expect(scripted.calls.getPet).to.equal(1 + READ_RETRY_BACKOFF_MS.length);
      expect(await failure(pets.raw.createPet({ name: 'Rex', categoryId: '1', status: 0 }))).to.equal(Status.UNAVAILABLE);
      expect(scripted.calls.createPet, 'a create is never retried').to.equal(1);

      const repository = new HeldReadsRepository();
      const held = await petService({ repository });
      cleanups.push(() => held.shutdown(), () => repository.release());
      const started = Date.now();
      expect(await failure(client(`127.0.0.1:${held.port}`, { deadlineMs: 300 }).raw.listPets(LIST))).to.equal(Status.DEADLINE_EXCEEDED);
      expect(Date.now() - started).to.be.at.least(290);
    });
  });

  it('reports every call once to onCallEnd, with its final status, retries included', async () => {
    const scripted = await startScriptedPetService({
      getPet: (attempt) => (attempt <= READ_RETRY_BACKOFF_MS.length ? { fail: Status.UNAVAILABLE } : { pet: PET }),
      listPets: () => ({ fail: Status.UNAVAILABLE }),
      createPet: () => ({ fail: Status.INVALID_ARGUMENT }),
    });
    cleanups.push(() => scripted.close());
    const ended: Array<[PetServiceMethod, string]> = [];
    const pets = client(`127.0.0.1:${scripted.port}`, {
      onCallEnd: (method, code, startedAt) => {
        expect(typeof startedAt).to.equal('bigint');
        ended.push([method, Status[code]!]);
      },
    });
    await pets.getPet({ id: '1' });
    await failure(pets.listPets(LIST));
    await failure(pets.createPet({ name: 'Rex', categoryId: '1', status: 0 }));
    await failure(pets.getPet({ id: '1' }, undefined, { signal: AbortSignal.abort() }));
    await failure(pets.raw.getPet({ id: 'not a number' }));
    expect(ended).to.deep.equal([
      ['GetPet', 'OK'],
      ['ListPets', 'UNAVAILABLE'],
      ['CreatePet', 'INVALID_ARGUMENT'],
      ['GetPet', 'CANCELLED'],
      ['GetPet', 'INTERNAL'],
    ]);
  });

  it('sends x-request-id and x-caller-id, the client-wide caller id unless a call names its own', async () => {
    // Debug: the pet service logs a fast successful call at debug only (LOG_SLOW_CALL_MS).
    const { logger, lines } = capturedLogs('debug');
    const server = await petService({ logger });
    cleanups.push(() => server.shutdown());
    const target = `127.0.0.1:${server.port}`;
    const billing = client(target, { callerId: 'svc:billing' });
    const shipping = client(target, { callerId: 'svc:shipping' });
    const create = (pets: PromisePetServiceClient, metadata = callMetadata({ idempotencyKey: 'order-7' })) =>
      pets.createPet({ name: 'Rex', categoryId: '1', status: 0 }, metadata);

    await billing.listPets(LIST, callMetadata({ requestId: 'req-42' }));
    expect(lines.find((line) => line.method === 'ListPets')?.requestId).to.equal('req-42');

    // The pet service scopes idempotency keys to x-caller-id: one key, two callers, two pets.
    const first = await create(billing);
    expect(first.replayed).to.equal(false);
    expect(await create(billing)).to.deep.include({ replayed: true, pet: first.pet });
    const other = await create(shipping);
    expect(other.replayed, "another caller's key").to.equal(false);
    expect(other.pet?.id).to.not.equal(first.pet?.id);
    const named = await create(shipping, callMetadata({ idempotencyKey: 'order-7', callerId: 'svc:billing' }));
    expect(named, 'a caller id in the call metadata wins').to.deep.include({ replayed: true, pet: first.pet });
  });

  it('refuses at once a caller id the pet service would refuse, and a deadline that is not positive', () => {
    expect(() => createPetServiceClient('127.0.0.1:1', { callerId: 'svc billing' })).to.throw(RangeError, /callerId/);
    expect(() => createPetServiceClient('127.0.0.1:1', { callerId: '' })).to.throw(RangeError, /callerId/);
    for (const deadlineMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => createPetServiceClient('127.0.0.1:1', { deadlineMs }), String(deadlineMs)).to.throw(RangeError, /deadlineMs/);
    }
  });

  it('detects a connection gone silent with keepalive pings, where without them a call waits out its deadline', async () => {
    expect(defaultTransportOptions().keepalive, 'keepalive is on by default').to.deep.equal(DEFAULT_KEEPALIVE);
    const server = await petService();
    cleanups.push(() => server.shutdown());
    const outcomes: Status[] = [];
    for (const keepalive of [{ timeMs: 100, timeoutMs: 200 }, false] as const) {
      const proxy = await startTcpProxy(server.port);
      cleanups.push(() => proxy.close());
      const pets = client(`127.0.0.1:${proxy.port}`, { keepalive, deadlineMs: 3000 });
      await pets.listPets(LIST);
      proxy.freeze();
      outcomes.push(await failure(pets.listPets(LIST)));
    }
    expect(outcomes.map((code) => Status[code])).to.deep.equal(['UNAVAILABLE', 'DEADLINE_EXCEEDED']);
  });
});
