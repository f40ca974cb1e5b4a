import { status as Status } from '@grpc/grpc-js';
import {
  type Collection,
  type Db,
  MongoClient,
  MongoNetworkError,
  MongoServerError,
  MongoServerSelectionError,
  MongoError,
} from 'mongodb';
import type { ListQuery, NewPetRecord, PetRecord, PetRepository, StoredStatus } from './pet-repository';
import { PetServiceError } from './pet-service-error';

/** Settings for {@link MongoPetRepository.connect}. */
export interface MongoSettings {
  readonly uri: string;
  readonly database: string;
  /** Bounds every wait on the server: selection, socket and each operation's `maxTimeMS`. */
  readonly timeoutMs: number;
}

interface PetDocument {
  _id: bigint;
  name: string;
  categoryId: bigint;
  status: StoredStatus;
}

interface CounterDocument {
  _id: string;
  seq: bigint;
}

const COUNTER_ID = 'pets';
// MaxTimeMSExpired, and the codes a server gives while it steps down or shuts down.
const UNAVAILABLE_SERVER_CODES = new Set([50, 91, 189, 11600, 11602, 13435, 13436]);

/**
 * The MongoDB store. Ids come from an atomic counter document (`$inc` with upsert), never from
 * max+1, so concurrent creates on any number of replicas get distinct ids; a crash between
 * taking an id and inserting leaves a gap, never a duplicate. Listing walks the
 * `{status: 1, _id: 1}` index (or `_id` alone), so a deep page costs what the first one costs.
 */
export class MongoPetRepository implements PetRepository {
  private constructor(
    private readonly client: MongoClient,
    private readonly pets: Collection<PetDocument>,
    private readonly counters: Collection<CounterDocument>,
    private readonly maxTimeMS: number,
  ) {}

  /** Connects, and creates the indexes the queries need (idempotent). */
  static async connect(settings: MongoSettings): Promise<MongoPetRepository> {
    const client = new MongoClient(settings.uri, {
      useBigInt64: true,
      retryWrites: true,
      writeConcern: { w: 'majority' },
      serverSelectionTimeoutMS: settings.timeoutMs,
      connectTimeoutMS: settings.timeoutMs,
      socketTimeoutMS: settings.timeoutMs * 2,
    });
    try {
      const db: Db = client.db(settings.database);
      const repository = new MongoPetRepository(
        client,
        db.collection<PetDocument>('pets'),
        db.collection<CounterDocument>('counters'),
        settings.timeoutMs,
      );
      await repository.pets.createIndex({ status: 1, _id: 1 }, { name: 'status_id' });
      return repository;
    } catch (error) {
      await client.close().catch(() => undefined);
      throw toStoreError(error);
    }
  }

  async create(pet: NewPetRecord): Promise<PetRecord> {
    try {
      const counter = await this.counters.findOneAndUpdate(
        { _id: COUNTER_ID },
        { $inc: { seq: 1n } },
        { upsert: true, returnDocument: 'after', maxTimeMS: this.maxTimeMS },
      );
      if (counter === null) throw new PetServiceError(Status.INTERNAL, 'id counter missing after upsert');
      const document: PetDocument = { _id: BigInt(counter.seq), name: pet.name, categoryId: pet.categoryId, status: pet.status };
      await this.pets.insertOne(document);
      return fromDocument(document);
    } catch (error) {
      throw toStoreError(error);
    }
  }

  async get(id: bigint): Promise<PetRecord | undefined> {
    try {
      const document = await this.pets.findOne({ _id: id }, { maxTimeMS: this.maxTimeMS });
      return document === null ? undefined : fromDocument(document);
    } catch (error) {
      throw toStoreError(error);
    }
  }

  async list(query: ListQuery): Promise<PetRecord[]> {
    const filter: Record<string, unknown> = {};
    if (query.status !== undefined) filter.status = query.status;
    if (query.afterId !== undefined) filter._id = { $gt: query.afterId };
    try {
      const documents = await this.pets
        .find(filter, { sort: { _id: 1 }, limit: query.limit, maxTimeMS: this.maxTimeMS })
        .toArray();
      return documents.map(fromDocument);
    } catch (error) {
      throw toStoreError(error);
    }
  }

  /** Round trip to the server, for health checks. */
  async ping(): Promise<void> {
    try {
      await this.client.db('admin').command({ ping: 1 }, { timeoutMS: this.maxTimeMS });
    } catch (error) {
      throw toStoreError(error);
    }
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

// Values written as small numbers by other tools decode as `number`; normalise to bigint.
function fromDocument(document: PetDocument): PetRecord {
  return {
    id: BigInt(document._id),
    name: document.name,
    categoryId: BigInt(document.categoryId),
    status: document.status,
  };
}

/** Maps "the store cannot be reached" to UNAVAILABLE; anything else stays a bug (INTERNAL). */
function toStoreError(error: unknown): unknown {
  if (error instanceof PetServiceError) return error;
  if (
    error instanceof MongoNetworkError ||
    error instanceof MongoServerSelectionError ||
    (error instanceof MongoServerError && UNAVAILABLE_SERVER_CODES.has(Number(error.code))) ||
    (error instanceof MongoError && error.name.includes('Timeout'))
  ) {
    return new PetServiceError(Status.UNAVAILABLE, 'pet store unavailable');
  }
  return error;
}
