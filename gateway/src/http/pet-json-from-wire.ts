import { GetPetResponse, ListPetsResponse } from '@petstore/proto';
import { petsToJson, petToJson } from './pet-json';

/** ListPets' answer: the body `petsToJson` renders, and the token of the next page ('' on the last). */
export interface PetsPageJson {
  readonly body: string;
  readonly nextPageToken: string;
}

/**
 * A GetPet, CreatePet or UpdatePet answer: the body `petToJson` renders, the pet's id (for
 * `Location`) and its etag (for `ETag`; '' when the pet service sent none).
 */
export interface PetJson {
  readonly body: string;
  readonly id: string;
  readonly etag: string;
}

/**
 * The JSON body of a ListPetsResponse, written straight from its protobuf bytes: byte for byte
 * what `petsToJson(ListPetsResponse.decode(bytes).pets)` writes (a property test holds the two
 * equal), without building a message, a Pet per pet or a string per field. Names are copied as
 * the UTF-8 they arrive in, escaped as JSON.stringify escapes them, and ids are written digit for
 * digit from their varints.
 *
 * Bytes it does not read as the pet service writes them (invalid UTF-8, which the generated
 * decoder replaces with U+FFFD; a group, field number 0, a field running past its message, anything
 * truncated) go the plain way instead: decoded by the generated decoder and rendered by
 * `petsToJson`, so the answer is the plain path's whatever the bytes.
 *
 * @throws what `ListPetsResponse.decode` throws for bytes that are no message.
 */
export function listPetsResponseToJson(bytes: Uint8Array): PetsPageJson {
  const input = asBuffer(bytes);
  try {
    return writeListPetsResponse(input);
  } catch (error) {
    if (error !== NOT_PLAIN) throw error;
    const { pets, nextPageToken } = ListPetsResponse.decode(input);
    return { body: petsToJson(pets), nextPageToken };
  } finally {
    releaseOutput();
  }
}

/**
 * The JSON body of a GetPetResponse, CreatePetResponse or UpdatePetResponse (the same wire shape: `Pet pet = 1`),
 * written straight from its protobuf bytes as {@link listPetsResponseToJson} writes a page: byte
 * for byte what `petToJson(decode(bytes).pet)` writes. A `pet` field given twice is the last one,
 * as in the generated decoder.
 *
 * @throws what the generated decoder throws for bytes that are no message, and an Error for a
 *   response without a pet, which the pet service never sends (the routes answer 500 to both).
 */
export function petResponseToJson(bytes: Uint8Array): PetJson {
  const input = asBuffer(bytes);
  let answer: PetJson | undefined;
  try {
    answer = writePetResponse(input);
  } catch (error) {
    if (error !== NOT_PLAIN) throw error;
    const { pet } = GetPetResponse.decode(input);
    if (pet !== undefined) answer = { body: petToJson(pet), id: pet.id, etag: pet.etag };
  } finally {
    releaseOutput();
  }
  if (answer === undefined) throw new Error('the pet service answered without a pet');
  return answer;
}

/** Thrown inside this module, never out of it, at bytes that take the plain path. */
const NOT_PLAIN = new Error('not as the pet service writes it');

const STATUS_AVAILABLE = Buffer.from('available"}');
const STATUS_PENDING = Buffer.from('pending"}');
const STATUS_SOLD = Buffer.from('sold"}');
const ID_KEY = Buffer.from('{"id":');
const NAME_KEY = Buffer.from(',"name":"');
const CATEGORY_KEY = Buffer.from('","categoryId":');
const STATUS_KEY = Buffer.from(',"status":"');
/** The most a pet writes besides its name: keys, punctuation, two int64s of up to 20 characters. */
const PET_OVERHEAD = ID_KEY.length + NAME_KEY.length + CATEGORY_KEY.length + STATUS_KEY.length + STATUS_AVAILABLE.length + 2 * 20;
/** JSON.stringify writes one byte as at most six: `\u001f`. */
const MAX_ESCAPED_BYTE = 6;
/** The output buffer kept between calls; a larger one, grown for a large response, is let go. */
const KEPT_OUTPUT_SIZE = 64 * 1024;

/** What JSON.stringify writes for each byte below 0x80: the byte itself, or its escape. */
const ESCAPES: readonly Buffer[] = Array.from({ length: 0x80 }, (_, byte) => Buffer.from(JSON.stringify(String.fromCharCode(byte)).slice(1, -1)));
/** 1 for each byte below 0x80 that JSON.stringify escapes. */
const ESCAPED = Uint8Array.from(ESCAPES, (escape) => (escape.length > 1 ? 1 : 0));

const EMPTY = Buffer.alloc(0);
let input: Buffer = EMPTY;
let pos = 0;
let output: Buffer = Buffer.allocUnsafe(KEPT_OUTPUT_SIZE);
let at = 0;
/** Whether the output so far is ASCII, which makes a string of one byte per character. */
let outputAscii = true;
/** Where the etag of the pet last written lies in `input` (start = end: none). */
let etagStart = 0;
let etagEnd = 0;

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function releaseOutput(): void {
  input = EMPTY;
  if (output.length > KEPT_OUTPUT_SIZE) output = Buffer.allocUnsafe(KEPT_OUTPUT_SIZE);
}

function writeListPetsResponse(bytes: Buffer): PetsPageJson {
  input = bytes;
  pos = 0;
  at = 0;
  outputAscii = true;
  const end = bytes.length;
  let tokenStart = 0;
  let tokenEnd = 0;
  reserve(1);
  output[at++] = 0x5b; // [
  while (pos < end) {
    const tag = readVarint32();
    if (tag === 10) {
      const length = readVarint32();
      if (at > 1) {
        reserve(1);
        output[at++] = 0x2c; // ,
      }
      writePet(pos, checkedEnd(length, end));
    } else if (tag === 18) {
      const length = readVarint32();
      tokenStart = pos;
      tokenEnd = checkedEnd(length, end);
      pos = tokenEnd;
    } else {
      skipField(tag, end);
    }
  }
  reserve(1);
  output[at++] = 0x5d; // ]
  return { body: outputText(), nextPageToken: readString(tokenStart, tokenEnd) };
}

function writePetResponse(bytes: Buffer): PetJson | undefined {
  input = bytes;
  pos = 0;
  at = 0;
  outputAscii = true;
  const end = bytes.length;
  let found = false;
  while (pos < end) {
    const tag = readVarint32();
    if (tag === 10) {
      const length = readVarint32();
      // Each pet is read, so that one the generated decoder would throw at is not passed over.
      at = 0;
      outputAscii = true;
      writePet(pos, checkedEnd(length, end));
      found = true;
    } else {
      skipField(tag, end);
    }
  }
  if (!found) return undefined;
  const body = outputText();
  return { body, id: body.slice(ID_KEY.length, body.indexOf(',', ID_KEY.length)), etag: readString(etagStart, etagEnd) };
}

/**
 * Writes the Pet in `input[start, end)` as `petToJson` does: fields in its order whatever their
 * order on the wire, the last of a field given twice, proto3 defaults for absent ones.
 */
function writePet(start: number, end: number): void {
  pos = start;
  let id = -1;
  let nameStart = 0;
  let nameEnd = 0;
  let categoryId = -1;
  let status = 0;
  etagStart = etagEnd = 0;
  while (pos < end) {
    const tag = readVarint32();
    if (tag === 8) {
      id = pos;
      skipVarint64();
    } else if (tag === 18) {
      const length = readVarint32();
      nameStart = pos;
      nameEnd = checkedEnd(length, end);
      pos = nameEnd;
    } else if (tag === 24) {
      categoryId = pos;
      skipVarint64();
    } else if (tag === 32) {
      status = readVarint32() | 0;
    } else if (tag === 42) {
      // Only answers of one pet carry an etag: a page's pets have none, and never reach here.
      const length = readVarint32();
      etagStart = pos;
      etagEnd = checkedEnd(length, end);
      pos = etagEnd;
    } else {
      skipField(tag, end);
    }
  }
  if (pos !== end) throw NOT_PLAIN;
  reserve(PET_OVERHEAD + MAX_ESCAPED_BYTE * (nameEnd - nameStart));
  copyIn(ID_KEY);
  writeInt64(id);
  copyIn(NAME_KEY);
  writeEscaped(nameStart, nameEnd);
  copyIn(CATEGORY_KEY);
  writeInt64(categoryId);
  copyIn(STATUS_KEY);
  copyIn(status === 2 ? STATUS_PENDING : status === 3 ? STATUS_SOLD : STATUS_AVAILABLE);
  pos = end;
}

/** Where a length-delimited field that starts at `pos` ends, if it ends within its message. */
function checkedEnd(length: number, end: number): number {
  const fieldEnd = pos + length;
  if (fieldEnd > end) throw NOT_PLAIN;
  return fieldEnd;
}

/**
 * Reads a varint as the generated decoder's `uint32()` does: up to ten bytes, the low 32 bits
 * kept, unsigned.
 */
function readVarint32(): number {
  const bytes = input;
  if (pos >= bytes.length) throw NOT_PLAIN;
  let byte = bytes[pos++]!;
  if (byte < 0x80) return byte;
  let value = byte & 0x7f;
  for (let shift = 7; shift < 35; shift += 7) {
    if (pos >= bytes.length) throw NOT_PLAIN;
    byte = bytes[pos++]!;
    value |= (byte & 0x7f) << shift;
    if (byte < 0x80) return value >>> 0;
  }
  for (let read = 5; read < 10; read += 1) {
    if (pos >= bytes.length) throw NOT_PLAIN;
    if (bytes[pos++]! < 0x80) return value >>> 0;
  }
  throw NOT_PLAIN;
}

/** Passes over an int64 varint as the generated decoder reads one: at most ten bytes. */
function skipVarint64(): void {
  const limit = Math.min(pos + 10, input.length);
  while (pos < limit) {
    if (input[pos++]! < 0x80) return;
  }
  throw NOT_PLAIN;
}

/**
 * Passes over a field this writer does not render, as the generated decoder skips an unknown one.
 * A group, field number 0 and wire types 6 and 7 take the plain path, which ends the message there
 * or throws.
 */
function skipField(tag: number, end: number): void {
  if (tag < 8) throw NOT_PLAIN;
  switch (tag & 7) {
    case 0:
      while (pos < end && input[pos]! >= 0x80) pos += 1;
      pos += 1;
      break;
    case 1:
      pos += 8;
      break;
    case 2: {
      const length = readVarint32();
      pos += length;
      break;
    }
    case 5:
      pos += 4;
      break;
    default:
      throw NOT_PLAIN;
  }
  if (pos > end) throw NOT_PLAIN;
}

/**
 * Writes the int64 varint at `start` (-1: absent, 0) in decimal as `reader.int64().toString()`
 * does: the low 64 bits of the varint, two's complement.
 */
function writeInt64(start: number): void {
  if (start === -1) {
    output[at++] = 0x30;
    return;
  }
  let value = 0;
  let scale = 1;
  for (let index = start; index < start + 7; index += 1) {
    const byte = input[index]!;
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) {
      writeDigits(value);
      return;
    }
    scale *= 0x80;
  }
  // Eight bytes and more: beyond what a double holds exactly. Bits past the 64th are dropped.
  let last = start + 7;
  while (input[last]! >= 0x80) last += 1;
  let big = 0n;
  for (let index = last; index >= start; index -= 1) big = (big << 7n) | BigInt(input[index]! & 0x7f);
  const text = BigInt.asIntN(64, big).toString();
  at += output.write(text, at, 'latin1');
}

/** Writes a non-negative integer below 2^49 in decimal. */
function writeDigits(value: number): void {
  const out = output;
  if (value < 10) {
    out[at++] = 0x30 + value;
    return;
  }
  let digits = 2;
  for (let power = 100; power <= value; power *= 10) digits += 1;
  let index = at + digits;
  at = index;
  let rest = value;
  while (rest >= 0x80000000) {
    const quotient = Math.floor(rest / 10);
    out[--index] = 0x30 + rest - quotient * 10;
    rest = quotient;
  }
  while (rest >= 10) {
    const quotient = (rest / 10) | 0;
    out[--index] = 0x30 + rest - quotient * 10;
    rest = quotient;
  }
  out[index - 1] = 0x30 + rest;
}

/**
 * Copies the UTF-8 in `input[start, end)` into the output as the inside of a JSON string, escaped
 * as JSON.stringify escapes the text it decodes to. Valid UTF-8 holds no unpaired surrogate, so
 * nothing beyond ASCII is escaped; invalid UTF-8 takes the plain path.
 */
function writeEscaped(start: number, end: number): void {
  const bytes = input;
  const out = output;
  let index = start;
  while (index < end) {
    const byte = bytes[index]!;
    if (byte < 0x80) {
      if (ESCAPED[byte] === 0) {
        out[at++] = byte;
      } else {
        copyIn(ESCAPES[byte]!);
      }
      index += 1;
    } else {
      const length = utf8SequenceLength(bytes, index, end);
      if (length === 0) throw NOT_PLAIN;
      outputAscii = false;
      for (const stop = index + length; index < stop; index += 1) out[at++] = bytes[index]!;
    }
  }
}

/** The text of the UTF-8 in `input[start, end)`, which must be valid (else the plain path). */
function readString(start: number, end: number): string {
  let ascii = true;
  for (let index = start; index < end; ) {
    if (input[index]! < 0x80) {
      index += 1;
    } else {
      const length = utf8SequenceLength(input, index, end);
      if (length === 0) throw NOT_PLAIN;
      index += length;
      ascii = false;
    }
  }
  return input.toString(ascii ? 'latin1' : 'utf8', start, end);
}

/**
 * The length of the well-formed UTF-8 sequence that starts with the non-ASCII byte at `index`
 * (Unicode's table 3-7: no overlong form, no surrogate, nothing past U+10FFFF), or 0 if there is
 * none, where the WHATWG decoder writes U+FFFD.
 */
function utf8SequenceLength(bytes: Buffer, index: number, end: number): number {
  const lead = bytes[index]!;
  if (lead < 0xc2 || lead > 0xf4) return 0;
  if (lead < 0xe0) return index + 1 < end && isContinuation(bytes[index + 1]!) ? 2 : 0;
  if (index + 2 >= end) return 0;
  const second = bytes[index + 1]!;
  if (lead < 0xf0) {
    const low = lead === 0xe0 ? 0xa0 : 0x80;
    const high = lead === 0xed ? 0x9f : 0xbf;
    return second >= low && second <= high && isContinuation(bytes[index + 2]!) ? 3 : 0;
  }
  if (index + 3 >= end) return 0;
  const low = lead === 0xf0 ? 0x90 : 0x80;
  const high = lead === 0xf4 ? 0x8f : 0xbf;
  return second >= low && second <= high && isContinuation(bytes[index + 2]!) && isContinuation(bytes[index + 3]!) ? 4 : 0;
}

function isContinuation(byte: number): boolean {
  return (byte & 0xc0) === 0x80;
}

function reserve(bytes: number): void {
  if (at + bytes <= output.length) return;
  const grown = Buffer.allocUnsafe(Math.max(2 * output.length, at + bytes));
  output.copy(grown, 0, 0, at);
  output = grown;
}

/** Copies a few bytes; a loop, since Buffer's copy costs more than the loop for so few. */
function copyIn(bytes: Buffer): void {
  const out = output;
  let index = at;
  for (let from = 0; from < bytes.length; from += 1) out[index++] = bytes[from]!;
  at = index;
}

function outputText(): string {
  return output.toString(outputAscii ? 'latin1' : 'utf8', 0, at);
}
