import { etagOf, type ListPetsResponse, type Pet } from '@petstore/proto';
import type { PetRecord } from '../pets/pet-record';
import { toWireStatus } from '../pets/pet-status';

/**
 * A stored pet as the wire carries it: int64s as decimal strings, the status as the enum, and its
 * etag (AIP-154), as every answer of one pet carries it.
 */
export function toWire(record: PetRecord): Pet {
  return {
    id: record.id.toString(),
    name: record.name,
    categoryId: record.categoryId.toString(),
    status: toWireStatus(record.status),
    etag: etagOf(record.version),
  };
}

/**
 * A stored pet as ListPets carries it: without its etag (docs/decisions.md), so a page's bytes,
 * and the CPU of a read on both sides, are what they were before etags.
 */
function toListWire(record: PetRecord): Pet {
  return {
    id: record.id.toString(),
    name: record.name,
    categoryId: record.categoryId.toString(),
    status: toWireStatus(record.status),
    etag: '',
  };
}

/**
 * A page of stored pets as ListPets answers it: a ListPetsResponse whose `pets` are made only when
 * read, since {@link serializeListPetsResponse} writes the records themselves. A page would
 * otherwise build a Pet and two decimal strings per pet only to parse them back into varints.
 */
export class StoredPetsPage implements ListPetsResponse {
  constructor(
    readonly records: readonly PetRecord[],
    readonly nextPageToken: string,
  ) {}

  get pets(): Pet[] {
    return this.records.map(toListWire);
  }
}

/**
 * ListPets' response serializer: the bytes ts-proto's `ListPetsResponse.encode` writes (a test
 * holds the two equal for any response), written straight into one Buffer sized first. The
 * generated encoder builds an array of byte numbers and a chunk per nested message, encodes each
 * string into a buffer of its own and then copies the result into a Buffer; ListPets is the call
 * made most, and those are most of what the service allocates of its own per call.
 */
export function serializeListPetsResponse(response: ListPetsResponse): Buffer {
  if (response instanceof StoredPetsPage) return serializePage(response.records, response.nextPageToken, recordSize, writeRecord);
  return serializePage(response.pets, response.nextPageToken, petSize, writePet);
}

/** The response's bytes, whatever form its pets have: `size` and `write` read one. */
function serializePage<T>(pets: readonly T[], nextPageToken: string, size: (pet: T) => number, write: (buffer: Buffer, at: number, pet: T) => number): Buffer {
  const sizes = new Array<number>(pets.length);
  let total = 0;
  for (let index = 0; index < pets.length; index += 1) {
    const petBytes = size(pets[index]!);
    sizes[index] = petBytes;
    total += 1 + varintSize(petBytes) + petBytes;
  }
  const tokenBytes = nextPageToken === '' ? 0 : Buffer.byteLength(nextPageToken);
  if (tokenBytes > 0) total += 1 + varintSize(tokenBytes) + tokenBytes;
  const buffer = Buffer.allocUnsafe(total);
  let at = 0;
  for (let index = 0; index < pets.length; index += 1) {
    buffer[at++] = 0x0a; // field 1, length-delimited
    at = writeVarint(buffer, at, sizes[index]!);
    at = write(buffer, at, pets[index]!);
  }
  if (tokenBytes > 0) {
    buffer[at++] = 0x12; // field 2, length-delimited
    at = writeVarint(buffer, at, tokenBytes);
    buffer.write(nextPageToken, at, 'utf8');
  }
  return buffer;
}

/** A stored pet's size on the wire: what {@link petSize} gives for `toListWire(record)`. */
function recordSize(record: PetRecord): number {
  return fieldsSize(uint64Of(record.id), record.name, uint64Of(record.categoryId), toWireStatus(record.status));
}

function writeRecord(buffer: Buffer, start: number, record: PetRecord): number {
  return writeFields(buffer, start, uint64Of(record.id), record.name, uint64Of(record.categoryId), toWireStatus(record.status));
}

/**
 * An int64 as its unsigned 64-bit varint value: a number while exact, else a bigint (two's
 * complement); undefined for 0, which proto3 leaves out.
 */
function uint64Of(value: bigint): number | bigint | undefined {
  if (value === 0n) return undefined;
  return value > 0n && value <= MAX_SAFE ? Number(value) : BigInt.asUintN(64, value);
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

function petSize(pet: Pet): number {
  const etagBytes = Buffer.byteLength(pet.etag);
  return fieldsSize(int64Value(pet.id), pet.name, int64Value(pet.categoryId), pet.status) + (etagBytes === 0 ? 0 : 1 + varintSize(etagBytes) + etagBytes);
}

function writePet(buffer: Buffer, start: number, pet: Pet): number {
  let at = writeFields(buffer, start, int64Value(pet.id), pet.name, int64Value(pet.categoryId), pet.status);
  if (pet.etag !== '') {
    buffer[at++] = 0x2a; // field 5, length-delimited
    at = writeVarint(buffer, at, Buffer.byteLength(pet.etag));
    at += buffer.write(pet.etag, at, 'utf8');
  }
  return at;
}

/** Proto3 leaves out fields at their default: an id or category of 0 (undefined here), an empty name, status 0. */
function fieldsSize(id: number | bigint | undefined, name: string, categoryId: number | bigint | undefined, status: number): number {
  let size = 0;
  if (id !== undefined) size += 1 + varintSize(id);
  if (name !== '') {
    const bytes = Buffer.byteLength(name);
    size += 1 + varintSize(bytes) + bytes;
  }
  if (categoryId !== undefined) size += 1 + varintSize(categoryId);
  if (status !== 0) size += 1 + varintSize(int32Value(status));
  return size;
}

function writeFields(buffer: Buffer, start: number, id: number | bigint | undefined, name: string, categoryId: number | bigint | undefined, status: number): number {
  let at = start;
  if (id !== undefined) {
    buffer[at++] = 0x08; // field 1, varint
    at = writeVarint(buffer, at, id);
  }
  if (name !== '') {
    buffer[at++] = 0x12; // field 2, length-delimited
    at = writeVarint(buffer, at, Buffer.byteLength(name));
    at += buffer.write(name, at, 'utf8');
  }
  if (categoryId !== undefined) {
    buffer[at++] = 0x18; // field 3, varint
    at = writeVarint(buffer, at, categoryId);
  }
  if (status !== 0) {
    buffer[at++] = 0x20; // field 4, varint
    at = writeVarint(buffer, at, int32Value(status));
  }
  return at;
}

/**
 * The unsigned 64-bit varint value of an int64 in decimal: a number while it is exact (every id
 * the service hands out below 2^53), else a bigint, two's complement for a negative one;
 * undefined for "0", which the generated encoder leaves out.
 */
function int64Value(decimal: string): number | bigint | undefined {
  if (decimal === '0') return undefined;
  const value = Number(decimal);
  return Number.isSafeInteger(value) && value >= 0 ? value : BigInt.asUintN(64, BigInt(decimal));
}

/** An int32 field's varint value: a negative one is sign-extended to 64 bits, ten bytes. */
function int32Value(value: number): number | bigint {
  return value >= 0 ? value : BigInt.asUintN(64, BigInt(value));
}

function varintSize(value: number | bigint): number {
  let size = 1;
  if (typeof value === 'number') {
    for (let rest = value; rest >= 0x80; rest = Math.floor(rest / 0x80)) size += 1;
  } else {
    for (let rest = value; rest >= 0x80n; rest >>= 7n) size += 1;
  }
  return size;
}

function writeVarint(buffer: Buffer, start: number, value: number | bigint): number {
  let at = start;
  if (typeof value === 'number') {
    let rest = value;
    while (rest >= 0x80) {
      buffer[at++] = (rest % 0x80) | 0x80;
      rest = Math.floor(rest / 0x80);
    }
    buffer[at++] = rest;
  } else {
    let rest = value;
    while (rest >= 0x80n) {
      buffer[at++] = Number(rest & 0x7fn) | 0x80;
      rest >>= 7n;
    }
    buffer[at++] = Number(rest);
  }
  return at;
}
