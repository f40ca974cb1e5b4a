import { isLosslessNumber, LosslessNumber, parse, stringify } from 'lossless-json';
import type { Int64Mode, NewPet, Pet, PetChange } from './types';

/** The gateway's Error body, as far as the client relies on it. */
export interface ErrorBody {
  readonly code: string;
  readonly message: string;
  readonly status: number;
}

const POSITIVE_INT64_DIGITS = /^[1-9][0-9]{0,18}$/;
const INT64_MAX = 9223372036854775807n;

/** Whether `text` is a positive int64 in plain decimal (no sign, no leading zero), at most 9223372036854775807. */
export function isPositiveInt64Text(text: string): boolean {
  return POSITIVE_INT64_DIGITS.test(text) && BigInt(text) <= INT64_MAX;
}
const PET_STATUSES: ReadonlySet<string> = new Set(['available', 'pending', 'sold']);

/**
 * Parses a response body without rounding: every number stays a LosslessNumber (its source text)
 * until a decoder below turns it into what the field needs.
 *
 * @throws SyntaxError for text that is not JSON.
 */
export function parseLosslessly(text: string): unknown {
  return parse(text);
}

/** A JSON body for a create; a bigint or a decimal string `categoryId` is written as a number literal, digit for digit. */
export function encodeNewPet(pet: NewPet | PetChange): string {
  const { categoryId } = pet;
  if (categoryId === undefined) return stringify(pet)!;
  let literal: bigint | LosslessNumber | number;
  if (typeof categoryId === 'number') {
    if (Number.isInteger(categoryId) && !Number.isSafeInteger(categoryId)) {
      throw new RangeError(`categoryId ${categoryId} is beyond 2^53 as a number and may already be rounded; pass a bigint or a string`);
    }
    literal = categoryId;
  } else if (typeof categoryId === 'string') {
    if (!isPositiveInt64Text(categoryId)) throw new RangeError(`categoryId "${categoryId}" is not a positive int64 in plain decimal`);
    literal = new LosslessNumber(categoryId);
  } else {
    literal = categoryId;
  }
  return stringify({ ...pet, categoryId: literal })!;
}

/** A Pet from parsed JSON, with its int64 fields in `mode`; undefined when it is not a Pet. */
export function decodePet<Mode extends Int64Mode>(value: unknown, mode: Mode): Pet<Mode> | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const { id, name, categoryId, status } = value as Record<string, unknown>;
  const decodedId = decodeInt64(id, mode);
  const decodedCategoryId = decodeInt64(categoryId, mode);
  if (decodedId === undefined || decodedCategoryId === undefined) return undefined;
  if (typeof name !== 'string' || typeof status !== 'string' || !PET_STATUSES.has(status)) return undefined;
  return { id: decodedId, name, categoryId: decodedCategoryId, status } as Pet<Mode>;
}

/** The Error body from parsed JSON; undefined when it is not one. */
export function decodeErrorBody(value: unknown): ErrorBody | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const { code, message, status } = value as Record<string, unknown>;
  if (typeof code !== 'string' || typeof message !== 'string' || !isLosslessNumber(status)) return undefined;
  return { code, message, status: status.valueOf() as number };
}

function decodeInt64<Mode extends Int64Mode>(value: unknown, mode: Mode): bigint | string | undefined {
  if (!isLosslessNumber(value) || !isPositiveInt64Text(value.value)) return undefined;
  return mode === 'string' ? value.value : BigInt(value.value);
}
