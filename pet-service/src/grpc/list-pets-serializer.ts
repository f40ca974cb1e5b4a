import type { ListPetsResponse, Pet } from '@petstore/proto';

/**
 * ListPets' response serializer: the bytes ts-proto's `ListPetsResponse.encode` writes (a test
 * holds the two equal for any response), written straight into one Buffer sized first. The
 * generated encoder builds an array of byte numbers and a chunk per nested message, encodes each
 * string into a buffer of its own and then copies the result into a Buffer; ListPets is the call
 * made most, and those are most of what the service allocates of its own per call.
 */
export function serializeListPetsResponse(response: ListPetsResponse): Buffer {
  const { pets, nextPageToken } = response;
  const sizes = new Array<number>(pets.length);
  let total = 0;
  for (let index = 0; index < pets.length; index += 1) {
    const size = petSize(pets[index]!);
    sizes[index] = size;
    total += 1 + varintSize(size) + size;
  }
  const tokenBytes = nextPageToken === '' ? 0 : Buffer.byteLength(nextPageToken);
  if (tokenBytes > 0) total += 1 + varintSize(tokenBytes) + tokenBytes;
  const buffer = Buffer.allocUnsafe(total);
  let at = 0;
  for (let index = 0; index < pets.length; index += 1) {
    buffer[at++] = 0x0a; // field 1, length-delimited
    at = writeVarint(buffer, at, sizes[index]!);
    at = writePet(buffer, at, pets[index]!);
  }
  if (tokenBytes > 0) {
    buffer[at++] = 0x12; // field 2, length-delimited
    at = writeVarint(buffer, at, tokenBytes);
    buffer.write(nextPageToken, at, 'utf8');
  }
  return buffer;
}

/** Proto3 leaves out fields at their default: an id or category of "0", an empty name, status 0. */
function petSize(pet: Pet): number {
  let size = 0;
  if (pet.id !== '0') size += 1 + varintSize(int64Value(pet.id));
  if (pet.name !== '') {
    const bytes = Buffer.byteLength(pet.name);
    size += 1 + varintSize(bytes) + bytes;
  }
  if (pet.categoryId !== '0') size += 1 + varintSize(int64Value(pet.categoryId));
  if (pet.status !== 0) size += 1 + varintSize(int32Value(pet.status));
  return size;
}

function writePet(buffer: Buffer, start: number, pet: Pet): number {
  let at = start;
  if (pet.id !== '0') {
    buffer[at++] = 0x08; // field 1, varint
    at = writeVarint(buffer, at, int64Value(pet.id));
  }
  if (pet.name !== '') {
    buffer[at++] = 0x12; // field 2, length-delimited
    at = writeVarint(buffer, at, Buffer.byteLength(pet.name));
    at += buffer.write(pet.name, at, 'utf8');
  }
  if (pet.categoryId !== '0') {
    buffer[at++] = 0x18; // field 3, varint
    at = writeVarint(buffer, at, int64Value(pet.categoryId));
  }
  if (pet.status !== 0) {
    buffer[at++] = 0x20; // field 4, varint
    at = writeVarint(buffer, at, int32Value(pet.status));
  }
  return at;
}

/**
 * The unsigned 64-bit varint value of an int64 in decimal: a number while it is exact (every id
 * the service hands out below 2^53), else a bigint, two's complement for a negative one.
 */
function int64Value(decimal: string): number | bigint {
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
