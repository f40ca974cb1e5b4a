import { status as Status } from '@grpc/grpc-js';
import { type Collection, MongoServerError, ReadPreference } from 'mongodb';
import { PetServiceError } from '../pets/pet-service-error';
import type { IdBlock, ReserveIdBlock } from './id-blocks';

/**
 * One reserved block. `_id` is the block's place in the chain of reservations (0, 1, 2, …), and
 * the unique index on it is what makes a reservation exclusive.
 */
export interface IdBlockDocument {
  _id: bigint;
  first: bigint;
  last: bigint;
}

/** The counter document of the store's earlier id scheme (one `$inc` per create); only read. */
export interface LegacyCounterDocument {
  _id: string;
  seq: bigint;
}

/** What {@link createMongoIdBlocks} reads and writes. */
export interface MongoIdBlockSettings {
  readonly blocks: Collection<IdBlockDocument>;
  /** Read once, for the first block: ids the counter gave out stay below it. */
  readonly legacyCounters: Collection<LegacyCounterDocument>;
  /** Read for the first block, and after a collision: no block starts below a pet's id. */
  readonly pets: Collection<{ _id: bigint }>;
  readonly size: number;
  readonly maxTimeMS: number;
}

const MAX_ID = 2n ** 63n - 1n;
const DUPLICATE_KEY = 11000;
const LEGACY_COUNTER_ID = 'pets';
// Each lost race means another replica got a block, so the chain grows with every attempt.
const MAX_ATTEMPTS = 1000;

/**
 * Reserves id blocks with one insert each, into a chain: block n + 1 starts after block n's last
 * id, and is inserted with `_id` n + 1. Two replicas that read the same tip race to insert the
 * same `_id`; the unique index lets one win, and the loser reads the new tip and tries again. So
 * blocks never overlap and each starts above every earlier one, on any server whose unique index
 * holds, which is why this is an insert and not an update: FerretDB v1's updates are not atomic
 * under concurrency (`$inc` and compare-and-set alike can both succeed), its unique index is.
 */
export function createMongoIdBlocks({ blocks, legacyCounters, pets, size, maxTimeMS }: MongoIdBlockSettings): ReserveIdBlock {
  // The write path reads the primary whatever the client's read preference: a secondary's tip may lag.
  const primary = { readPreference: ReadPreference.primary, maxTimeMS };
  const highestPetId = async (): Promise<bigint> => {
    const pet = await pets.findOne({}, { ...primary, sort: { _id: -1 }, projection: { _id: 1 } });
    return pet === null ? 0n : BigInt(pet._id);
  };
  const legacyFloor = async (): Promise<bigint> => {
    const [counter, pet] = await Promise.all([legacyCounters.findOne({ _id: LEGACY_COUNTER_ID }, primary), highestPetId()]);
    const seq = counter === null ? 0n : BigInt(counter.seq);
    return seq > pet ? seq : pet;
  };

  return async (above) => {
    for (let attempt = 1; ; attempt += 1) {
      const tip = await blocks.findOne({}, { ...primary, sort: { _id: -1 } });
      let floor = tip === null ? await legacyFloor() : BigInt(tip.last);
      if (above !== undefined) {
        const highest = await highestPetId();
        for (const candidate of [above, highest]) if (candidate > floor) floor = candidate;
      }
      const block: IdBlock = { first: floor + 1n, last: floor + BigInt(size) };
      if (block.last > MAX_ID) throw new PetServiceError(Status.RESOURCE_EXHAUSTED, 'pet ids exhausted');
      try {
        await blocks.insertOne({ _id: tip === null ? 0n : BigInt(tip._id) + 1n, ...block });
        return block;
      } catch (error) {
        if (!(error instanceof MongoServerError && error.code === DUPLICATE_KEY) || attempt >= MAX_ATTEMPTS) throw error;
      }
    }
  };
}
