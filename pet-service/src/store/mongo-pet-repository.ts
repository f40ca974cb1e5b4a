import { setTimeout as sleep } from 'node:timers/promises';
import { status as Status } from '@grpc/grpc-js';
import { ConfigError, StartupError, withinDeadline } from '@petstore/runtime';
import { type Collection, type CommandStartedEvent, MongoClient, MongoError, MongoServerError, ReadPreference, type ReadPreferenceMode } from 'mongodb';
import { IDEMPOTENCY_WINDOW_MS, type IdempotencyClaim } from '../pets/idempotency';
import { statusesLeadingTo } from '@petstore/proto';
import type { NewPetRecord, PetChange, PetRecord, StoredStatus } from '../pets/pet-record';
import type { CreateResult, ListQuery, PetRepository, UpdateResult, VersionCondition } from './pet-repository';
import { PetServiceError } from '../pets/pet-service-error';
import { applyChange, checkVersion } from '../pets/pet-change';
import { KeyedQueue } from './keyed-queue';
import { createIdAllocator, type IdAllocator } from './id-blocks';
import { createMongoIdBlocks, type IdBlockDocument, type LegacyCounterDocument } from './mongo-id-blocks';
import { isConnectionFailure, isCredentialRefusal, isDuplicateKey, isFailover, toStoreError } from './mongo-error-classification';

/** Settings for {@link MongoPetRepository.connect}. */
export interface MongoSettings {
  readonly uri: string;
  readonly database: string;
  /**
   * Bounds every wait on the server: selection, connect, socket, write concern and `maxTimeMS`;
   * also how long after a create began it may still be retried after a failover (the write
   * limiter lets a create start only while its caller's deadline leaves this long).
   */
  readonly timeoutMs: number;
  /** Milliseconds since the epoch; idempotency keys expire on it. */
  readonly now?: () => number;
  /** Where `get` and `list` read (unset: primary). Creates read the primary whatever this says. */
  readonly readPreference?: ReadPreferenceMode;
  /** Ids reserved at a time (unset: 1000); see {@link createMongoIdBlocks}. */
  readonly idBlockSize?: number;
  /** Called with every command the store sends (tests and diagnostics; unset: none are watched). */
  readonly onCommand?: (event: CommandStartedEvent) => void;
}

interface PetDocument {
  _id: bigint;
  name: string;
  categoryId: bigint;
  status: StoredStatus;
  /** Set on pets made by an idempotent create, so a retry can tell its pet from another's. */
  idempotencyKey?: string;
  /** Raised by every change; absent on pets never changed (and on those stored before versions): 0. */
  version?: number | bigint;
  /**
   * The last change made with an idempotency key, written by that change's own write; it stands
   * for the key until `expiresAt`, as the key's record does (absent on marks written without one).
   */
  lastChange?: { key: string; fingerprint: string; expiresAt?: Date };
}

/**
 * A remembered idempotent create or change; `_id` is the caller-scoped key, so it is unique. A
 * create's is written before its pet; a change's after its write, with the pet it left.
 */
interface IdempotencyDocument {
  _id: string;
  fingerprint: string;
  petId: bigint;
  expiresAt: Date;
  /** Set on a create's claim when its pet is deleted, so that a replay does not make it again. */
  deleted?: boolean;
  /** A change's outcome: the pet as it left it. */
  changed?: { name: string; categoryId: bigint; status: StoredStatus; version: number };
}

const NOT_IMPLEMENTED = 238;
// Ids found in use before one is free: only where ids were written without a reservation.
const MAX_ID_ATTEMPTS = 1000;
// A create's attempts after a failover, within its retry budget; backoff doubles from the first.
const MAX_CREATE_ATTEMPTS = 8;
/**
 * Writes of one change without an etag: a write that matched nothing is explained by reading the
 * pet, and when the pet then allows the change (another change came between), written again.
 */
const MAX_CHANGE_ATTEMPTS = 8;
const FIRST_BACKOFF_MS = 20;
const DEFAULT_ID_BLOCK_SIZE = 1000;
const PRIMARY = ReadPreference.primary;
const SWEEP_INTERVAL_MS = 60_000;
/**
 * What a name lookup or a socket fails with before the driver has a server to talk to: a
 * `mongodb+srv://` name whose DNS records do not answer yet gives the resolver's own error.
 */
const UNREACHABLE_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'ESERVFAIL', 'ETIMEOUT', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * The MongoDB store.
 *
 * Ids come from blocks each replica reserves with one insert ({@link createMongoIdBlocks}), so a
 * create writes no shared document, ids stay unique across replicas and restarts, and a crashed
 * replica's unused ids stay a gap, never a duplicate. The unique `_id` index has the last word: an
 * insert that finds its id in use (ids written without a reservation: a restored collection, or a
 * replica of the earlier counter scheme during a rolling update) moves to a block above it.
 *
 * Listing walks the `{status: 1, _id: 1}` index (or `_id` alone), so a deep page costs what the
 * first one costs. Writes use majority write concern with retryable writes; a create that still
 * fails on a failover is tried again with the same id and idempotency claim while its retry budget
 * lasts. `get` and `list` read where the read preference says, with retryable reads.
 */
export class MongoPetRepository implements PetRepository {
  private lastSweep = Number.NEGATIVE_INFINITY;
  /**
   * False while the server is known to be unreachable. Operations then fail at once instead of
   * waiting out server selection, so a MongoDB outage is UNAVAILABLE (503) well inside the
   * gateway's deadline rather than a timeout. Only a failure to reach the server sets it: an
   * operation that ran out of time says the server is slow, and failing every other operation for
   * it would turn a burst of slow writes into failed reads.
   */
  private reachable = true;
  /**
   * Whether the driver last saw some member it could read from. During an election the primary is
   * gone but secondaries are not: an operation that needed the primary and failed then says
   * nothing about the store as a whole, and must not make creates that could wait for the new
   * primary fail at once.
   */
  private dataBearing = true;
  /** The write path reads the primary: a secondary may not have the claim or the pet yet. */
  private readonly primary: { readonly readPreference: ReadPreference; readonly maxTimeMS: number };

  private constructor(
    private readonly client: MongoClient,
    private readonly pets: Collection<PetDocument>,
    private readonly creates: Collection<IdempotencyDocument>,
    private readonly ids: IdAllocator,
    private readonly maxTimeMS: number,
    private readonly now: () => number,
    /** False where the server has no TTL indexes: expired keys are then swept by the store. */
    private readonly ttlIndex: boolean,
    /**
     * False on FerretDB v1, whose updates and deletes read and then write without holding the
     * document (FerretDB/FerretDB#3040): a filter is no condition there. Its changes are then
     * queued per pet in this replica (docs/mongodb.md).
     */
    private readonly atomicWrites: boolean,
  ) {
    this.primary = { readPreference: PRIMARY, maxTimeMS };
    client.on('topologyDescriptionChanged', (event) => {
      const topology = event.newDescription;
      this.dataBearing = topology.hasDataBearingServers;
      if (topology.hasDataBearingServers) this.reachable = true;
      else if ([...topology.servers.values()].some((server) => isConnectionFailure(server.error))) this.reachable = false;
    });
  }

  /**
   * Connects, and creates the indexes the queries need (idempotent: safe on every start). A store
   * that cannot be reached, or is too slow, is a {@link PetServiceError} naming its hosts (worth
   * another try); a refusal by the server (credentials, permissions) a {@link StartupError} naming
   * MONGODB_URI, which no retry fixes.
   */
  static async connect(settings: MongoSettings): Promise<MongoPetRepository> {
    const client = new MongoClient(settings.uri, {
      useBigInt64: true,
      retryWrites: true,
      // A read that meets a failover is sent once more, to a member the read preference allows.
      retryReads: true,
      readPreference: settings.readPreference ?? 'primary',
      writeConcern: { w: 'majority', wtimeoutMS: settings.timeoutMs },
      serverSelectionTimeoutMS: settings.timeoutMs,
      // How soon a fail-fast store notices that the server is back.
      heartbeatFrequencyMS: 1000,
      connectTimeoutMS: settings.timeoutMs,
      socketTimeoutMS: settings.timeoutMs * 2,
      monitorCommands: settings.onCommand !== undefined,
    });
    if (settings.onCommand !== undefined) client.on('commandStarted', settings.onCommand);
    try {
      const db = client.db(settings.database);
      const pets = db.collection<PetDocument>('pets');
      const creates = db.collection<IdempotencyDocument>('idempotency_keys');
      await pets.createIndex({ status: 1, _id: 1 }, { name: 'status_id' });
      const ttlIndex = await creates.createIndex({ expiresAt: 1 }, { name: 'expires_at_ttl', expireAfterSeconds: 0 }).then(
        () => true,
        (error: unknown) => {
          if (error instanceof MongoServerError && error.code === NOT_IMPLEMENTED) return false;
          throw error;
        },
      );
      if (!ttlIndex) await creates.createIndex({ expiresAt: 1 }, { name: 'expires_at' });
      const buildInfo = await db.admin().command({ buildInfo: 1 });
      const ids = createIdAllocator(
        createMongoIdBlocks({
          blocks: db.collection<IdBlockDocument>('id_blocks'),
          legacyCounters: db.collection<LegacyCounterDocument>('counters'),
          pets: db.collection<{ _id: bigint }>('pets'),
          size: settings.idBlockSize ?? DEFAULT_ID_BLOCK_SIZE,
          maxTimeMS: settings.timeoutMs,
        }),
      );
      return new MongoPetRepository(
        client,
        pets,
        creates,
        ids,
        settings.timeoutMs,
        settings.now ?? Date.now,
        ttlIndex,
        buildInfo.ferretdbVersion === undefined,
      );
    } catch (error) {
      await client.close().catch(() => undefined);
      // The operator reads these, not a client: say where, and why. The driver's error chains the
      // same message thrice, and the log's error serializer would print each, so it is not the cause.
      const hosts = client.options.srvHost ?? client.options.hosts.map((host) => host.toString()).join(',');
      if (isCredentialRefusal(error)) {
        // The URI holds the password: only its hosts are named.
        throw new ConfigError(`MONGODB_URI: MongoDB at ${hosts} refuses the credentials (${oneLine((error as Error).message)}); put the pet service user's in the URI, with authSource`);
      }
      const storeError = toStoreError(error);
      if (storeError instanceof PetServiceError || UNREACHABLE_CODES.has(String((error as NodeJS.ErrnoException).code))) {
        const code = storeError instanceof PetServiceError ? storeError.code : Status.UNAVAILABLE;
        throw new PetServiceError(code, `pet store unavailable: MongoDB at ${hosts}: ${(error as Error).message}`);
      }
      if (error instanceof MongoError) {
        throw new StartupError(`MONGODB_URI: MongoDB at ${hosts} refuses the pet service: ${oneLine(error.message)}`);
      }
      throw error;
    }
  }

  async create(pet: NewPetRecord, idempotency?: IdempotencyClaim): Promise<CreateResult> {
    return this.run(async () =>
      idempotency === undefined ? { pet: fromDocument(await this.insertWithNewId(pet)), replayed: false } : this.createOnce(pet, idempotency),
    );
  }

  async get(id: bigint, signal?: AbortSignal): Promise<PetRecord | undefined> {
    return this.read(async () => {
      const document = await this.pets.findOne({ _id: id }, { maxTimeMS: this.maxTimeMS, signal });
      return document === null ? undefined : fromDocument(document);
    });
  }

  async list(query: ListQuery, signal?: AbortSignal): Promise<PetRecord[]> {
    const filter: Record<string, unknown> = {};
    if (query.status !== undefined) filter.status = query.status;
    if (query.afterId !== undefined) filter._id = { $gt: query.afterId };
    return this.read(async () => {
      const documents = await this.pets
        .find(filter, { sort: { _id: 1 }, limit: query.limit, maxTimeMS: this.maxTimeMS, signal })
        .toArray();
      return documents.map(fromDocument);
    });
  }

  async update(id: bigint, change: PetChange, versions: VersionCondition, idempotency?: IdempotencyClaim): Promise<UpdateResult> {
    return this.run(() => this.serialized(id, () => (idempotency === undefined ? this.change(id, change, versions, undefined) : this.changeOnce(id, change, versions, idempotency))));
  }

  async delete(id: bigint, versions: VersionCondition): Promise<void> {
    await this.run(() =>
      this.serialized(id, async () => {
        for (let attempt = 1; ; attempt += 1) {
          const document = await this.pets.findOne({ _id: id }, this.primary);
          if (document === null) throw PetServiceError.notFound(id);
          checkVersion(fromDocument(document), versions);
          // The create's claim first: a replay of that create must answer, not make the pet again.
          if (document.idempotencyKey !== undefined) {
            await this.creates.updateOne({ _id: document.idempotencyKey, petId: id }, { $set: { deleted: true } });
          }
          const { deletedCount } = await this.pets.deleteOne({ _id: id, ...versionFilter(versions) });
          if (deletedCount === 1) return;
          // Gone or changed since the read: the next read says which.
          if (attempt >= MAX_CHANGE_ATTEMPTS) throw PetServiceError.keptChanging();
        }
      }),
    );
  }

  /**
   * Round trip to the server, for health checks: to any member, the nearest, so that an election
   * (no primary for a few seconds) does not turn every replica unready at once. Creates wait for
   * the new primary within their retry budget meanwhile, and reads go where the read preference
   * allows; only a store with no member reachable fails it.
   */
  async ping(): Promise<void> {
    // The health monitor's ping always asks the server: it is how a store marked unreachable
    // learns that it is back even when the driver saw no change in the topology.
    await this.run(() => this.client.db('admin').command({ ping: 1 }, { readPreference: ReadPreference.nearest }), true);
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  /** Whether the server expires idempotency keys itself (a TTL index). */
  get expiresKeysOnServer(): boolean {
    return this.ttlIndex;
  }

  /** Id blocks this replica has reserved so far: the writes its ids cost. */
  get idBlocksReserved(): number {
    return this.ids.blocks;
  }

  /**
   * Runs one store operation: at once UNAVAILABLE while the server is known to be unreachable.
   * An operation that cannot reach the server, while no member is reachable, marks it so (one that
   * needed the primary during an election does not), until an operation, a health ping or
   * the driver's heartbeat reaches it again; one that runs out of time marks nothing. Errors leave
   * as {@link PetServiceError} where the store is at fault.
   */
  private async run<T>(operation: () => Promise<T>, probe = false): Promise<T> {
    if (!this.reachable && !probe) throw new PetServiceError(Status.UNAVAILABLE, 'pet store unavailable');
    try {
      const result = await operation();
      this.reachable = true;
      return result;
    } catch (error) {
      if (isConnectionFailure(error) && !this.dataBearing) this.reachable = false;
      throw toStoreError(error);
    }
  }

  /**
   * A read gets the store timeout in all, the driver's retry included: a retry waits for server
   * selection again, and a read that met an outage just as it began would otherwise take twice
   * the timeout and outlast the caller's deadline, a 504 where the store being down is a 503.
   * Past that timeout the store is down or too slow, and either way another try now would not
   * help: the answer tells clients not to retry.
   */
  private read<T>(operation: () => Promise<T>): Promise<T> {
    return withinDeadline(this.run(operation), this.maxTimeMS, () => PetServiceError.withoutRetry(Status.UNAVAILABLE, 'pet store did not answer in time'));
  }

  /**
   * Runs `attempt` again after a failover error the driver's own retry did not absorb (a second
   * stepdown, an election that outlasted server selection, a connection lost with no retry), with
   * a doubling backoff, while the store timeout since the create began lasts and some member is
   * reachable: a store that is down fails as before, within its timeout. `attempt` keeps its id
   * and claim from one call to the next, so a retry cannot create a second pet.
   */
  private async retryingFailover<T>(attempt: () => Promise<T>): Promise<T> {
    const started = performance.now();
    for (let attempts = 1; ; attempts += 1) {
      try {
        return await attempt();
      } catch (error) {
        const backoff = FIRST_BACKOFF_MS * 2 ** (attempts - 1);
        const retry =
          isFailover(error) && this.reachable && attempts < MAX_CREATE_ATTEMPTS && performance.now() - started + backoff < this.maxTimeMS;
        if (!retry) throw error;
        await sleep(backoff);
      }
    }
  }

  /**
   * Inserts the pet under a new id. An insert whose answer was lost to a failover is sent again
   * with the same id; when an insert finds its id taken, by this very pet, an earlier attempt was
   * applied, and by another, ids were written without a reservation and the pet moves above them.
   */
  private async insertWithNewId(pet: NewPetRecord): Promise<PetDocument> {
    let document: PetDocument | undefined;
    let collisions = 0;
    return this.retryingFailover(async () => {
      for (;;) {
        document ??= toDocument(await this.ids.next(), pet, undefined);
        try {
          await this.pets.insertOne(document);
          return document;
        } catch (error) {
          if (!isDuplicateKey(error)) throw error;
        }
        if (sameRecord(await this.pets.findOne({ _id: document._id }, this.primary), document)) return document;
        collisions += 1;
        if (collisions >= MAX_ID_ATTEMPTS) throw new PetServiceError(Status.UNAVAILABLE, 'pet store could not assign an id');
        this.ids.skipPast(document._id);
        document = undefined;
      }
    });
  }

  /**
   * The key is claimed first, with the id its pet will get, and the pet inserted second. A crash
   * between the two leaves a claim whose pet is missing, which the retry then inserts; two
   * concurrent requests with one key both end on the same pet. A failover retry claims with the
   * same candidate (the same id), and finds its own claim if the first attempt wrote it.
   */
  private async createOnce(pet: NewPetRecord, { key, fingerprint }: IdempotencyClaim): Promise<CreateResult> {
    const now = this.now();
    this.sweepExpired(now);
    let candidate: IdempotencyDocument | undefined;
    return this.retryingFailover(async () => {
      let claim = await this.creates.findOne({ _id: key, expiresAt: { $gt: new Date(now) } }, this.primary);
      let fresh = false;
      if (claim === null) {
        candidate ??= { _id: key, fingerprint, petId: await this.ids.next(), expiresAt: new Date(now + IDEMPOTENCY_WINDOW_MS) };
        claim = await this.claim(candidate, now);
        fresh = claim === candidate;
      }
      if (claim.fingerprint !== fingerprint) throw PetServiceError.idempotencyConflict();
      return this.settle(claim, pet, fresh);
    });
  }

  /** Inserts the claim, or returns the one that beat it; an expired claim not yet swept gives way. */
  private async claim(candidate: IdempotencyDocument, now: number): Promise<IdempotencyDocument> {
    for (;;) {
      try {
        await this.creates.insertOne(candidate);
        return candidate;
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
      const existing = await this.creates.findOne({ _id: candidate._id }, this.primary);
      if (existing !== null && existing.expiresAt.getTime() > now) return existing;
      await this.creates.deleteOne({ _id: candidate._id, expiresAt: { $lte: new Date(now) } });
    }
  }

  /**
   * Makes sure the claim's pet exists and is this key's, and returns it. A fresh claim's pet
   * cannot exist yet, so it is inserted without looking first.
   */
  private async settle(initial: IdempotencyDocument, pet: NewPetRecord, fresh: boolean): Promise<CreateResult> {
    let claim = initial;
    let look = !fresh;
    for (let attempt = 1; ; attempt += 1) {
      // A deleted pet's create answers as it first did, and is not made again.
      if (claim.deleted === true) return { pet: fromDocument(toDocument(claim.petId, pet, undefined)), replayed: true };
      const existing = look ? await this.pets.findOne({ _id: claim.petId }, this.primary) : null;
      look = true;
      // The first outcome: the pet as this create made it, whatever changed it since.
      if (existing !== null && existing.idempotencyKey === claim._id) return { pet: fromDocument(toDocument(claim.petId, pet, undefined)), replayed: true };
      if (existing === null) {
        const document = toDocument(claim.petId, pet, claim._id);
        try {
          await this.pets.insertOne(document);
          return { pet: fromDocument(document), replayed: false };
        } catch (error) {
          if (!isDuplicateKey(error)) throw error;
          continue; // a concurrent retry of the same key, or another create, took the id first
        }
      }
      if (attempt >= MAX_ID_ATTEMPTS) throw new PetServiceError(Status.UNAVAILABLE, 'pet store could not assign an id');
      // Another pet holds the claimed id (written without a reservation): claim one above it.
      this.ids.skipPast(claim.petId);
      await this.creates.updateOne({ _id: claim._id, petId: claim.petId }, { $set: { petId: await this.ids.next() } });
      claim = (await this.creates.findOne({ _id: claim._id }, this.primary)) ?? claim;
    }
  }

  /** Runs `operation` alone among this replica's changes of the pet `id` where writes are not atomic. */
  private serialized<T>(id: bigint, operation: () => Promise<T>): Promise<T> {
    return this.atomicWrites ? operation() : this.changesInFlight.run(id, operation);
  }

  private readonly changesInFlight = new KeyedQueue<bigint>();

  /**
   * One change: one conditional write whose filter holds every rule (the pet, one of `versions`,
   * a status the new one can be reached from, something that differs, and not this key's change
   * already), raising the version by one. A write that matched nothing is explained by reading the
   * pet (applyChange's rules, in their order); when the pet then allows the change, another change
   * came between the two, and without an etag the change is written again to the pet as it is.
   */
  private async change(id: bigint, change: PetChange, versions: VersionCondition, key: IdempotencyClaim | undefined, now = this.now()): Promise<UpdateResult> {
    const conditions: Record<string, unknown>[] = [{ _id: id }];
    if (versions !== undefined) conditions.push(versionFilter(versions));
    const set: Record<string, unknown> = {};
    const differs: Record<string, unknown>[] = [];
    if (change.name !== undefined) {
      set.name = change.name;
      differs.push({ name: { $ne: change.name } });
    }
    if (change.categoryId !== undefined) {
      set.categoryId = change.categoryId;
      differs.push({ categoryId: { $ne: change.categoryId } });
    }
    if (change.status !== undefined) {
      // A change of status always differs: the table leads to no status from itself.
      set.status = change.status;
      conditions.push({ status: { $in: statusesLeadingTo(change.status) } });
    } else {
      conditions.push({ $or: differs });
    }
    if (key !== undefined) {
      set.lastChange = { key: key.key, fingerprint: key.fingerprint, expiresAt: new Date(now + IDEMPOTENCY_WINDOW_MS) };
      // A mark of this key stands for it only within its window, as its record in idempotency_keys.
      conditions.push({
        $or: [{ 'lastChange.key': { $ne: key.key } }, { 'lastChange.expiresAt': { $lte: new Date(now) } }, { 'lastChange.expiresAt': { $exists: false } }],
      });
    }
    const filter = { $and: conditions };
    for (let attempt = 1; ; attempt += 1) {
      const written = await this.pets.findOneAndUpdate(filter, { $set: set, $inc: { version: 1 } }, { returnDocument: 'after', maxTimeMS: this.maxTimeMS });
      if (written !== null) return { pet: fromDocument(written), changed: true, replayed: false };
      const document = await this.pets.findOne({ _id: id }, this.primary);
      if (document === null) throw PetServiceError.notFound(id);
      const mark = document.lastChange;
      if (key !== undefined && mark?.key === key.key && mark.expiresAt !== undefined && mark.expiresAt.getTime() > now) {
        // This key's change was written, by a request whose answer was lost or by one still running.
        if (mark.fingerprint !== key.fingerprint) throw PetServiceError.idempotencyConflict();
        return { pet: fromDocument(document), changed: true, replayed: true };
      }
      const pet = fromDocument(document);
      if (applyChange(pet, change, versions) === undefined) return { pet, changed: false, replayed: false };
      if (attempt >= MAX_CHANGE_ATTEMPTS) throw PetServiceError.keptChanging();
    }
  }

  /**
   * A change with an idempotency key: a remembered outcome is answered again (the key with another
   * change is ALREADY_EXISTS); otherwise the change is made, its write marking the pet with the
   * key, and its outcome remembered after. A retry whose outcome was not remembered yet (a
   * concurrent duplicate, or a crash between the two writes) finds the key on the pet instead.
   */
  private async changeOnce(id: bigint, change: PetChange, versions: VersionCondition, idempotency: IdempotencyClaim): Promise<UpdateResult> {
    const now = this.now();
    this.sweepExpired(now);
    const earlier = await this.creates.findOne({ _id: idempotency.key, expiresAt: { $gt: new Date(now) } }, this.primary);
    if (earlier !== null) {
      if (earlier.fingerprint !== idempotency.fingerprint || earlier.changed === undefined) throw PetServiceError.idempotencyConflict();
      const { name, categoryId, status, version } = earlier.changed;
      return { pet: { id, name, categoryId: BigInt(categoryId), status, version: Number(version) }, changed: true, replayed: true };
    }
    const result = await this.change(id, change, versions, idempotency, now);
    if (!result.changed || result.replayed) return result;
    const { name, categoryId, status, version } = result.pet;
    const remembered: IdempotencyDocument = {
      _id: idempotency.key,
      fingerprint: idempotency.fingerprint,
      petId: id,
      expiresAt: new Date(now + IDEMPOTENCY_WINDOW_MS),
      changed: { name, categoryId, status, version },
    };
    // Remembered by the pet's mark alone until then; an expired key of the same name gives way.
    await this.claim(remembered, now).catch(() => undefined);
    return result;
  }

  /** Where the server has no TTL index, deletes expired keys at most once a minute. */
  private sweepExpired(now: number): void {
    if (this.ttlIndex || now - this.lastSweep < SWEEP_INTERVAL_MS) return;
    this.lastSweep = now;
    this.creates.deleteMany({ expiresAt: { $lte: new Date(now) } }).catch(() => undefined);
  }
}

function toDocument(id: bigint, pet: NewPetRecord, idempotencyKey: string | undefined): PetDocument {
  const document: PetDocument = { _id: id, name: pet.name, categoryId: pet.categoryId, status: pet.status };
  if (idempotencyKey !== undefined) document.idempotencyKey = idempotencyKey;
  return document;
}

// Values written as small numbers by other tools decode as `number`; normalise to bigint.
function fromDocument(document: PetDocument): PetRecord {
  return {
    id: BigInt(document._id),
    name: document.name,
    categoryId: BigInt(document.categoryId),
    status: document.status,
    version: document.version === undefined ? 0 : Number(document.version),
  };
}

/**
 * The filter of a write that may start only from one of `versions`; a pet stored without a
 * version (never changed, or stored before versions existed) is version 0.
 */
function versionFilter(versions: VersionCondition): Record<string, unknown> {
  if (versions === undefined) return {};
  const stored = versions.filter((version) => version > 0);
  if (!versions.includes(0)) return { version: { $in: stored } };
  if (stored.length === 0) return { version: { $exists: false } };
  return { $or: [{ version: { $exists: false } }, { version: { $in: stored } }] };
}

function sameRecord(found: PetDocument | null, sent: PetDocument): boolean {
  return (
    found !== null &&
    found.name === sent.name &&
    BigInt(found.categoryId) === sent.categoryId &&
    found.status === sent.status &&
    found.idempotencyKey === sent.idempotencyKey
  );
}

/** A driver's message on one line: a start-up error is one line naming the variable. */
function oneLine(message: string): string {
  return message.replace(/\s+/g, ' ').trim();
}
