import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * The environments a secret can be issued for. The environment is part of the secret's prefix
 * (`pk_live_`, `pk_test_`), so that a secret scanner, or a person, can tell a leaked production
 * key from a test key at a glance.
 */
export const KEY_ENVIRONMENTS = ['live', 'test'] as const;
export type KeyEnvironment = (typeof KEY_ENVIRONMENTS)[number];

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_BYTES = 32;
/** Base62 digits of 256 random bits: 62^43 > 2^256. */
const BODY_LENGTH = 43;
/** Base62 digits of a CRC-32: 62^6 > 2^32. */
const CHECKSUM_LENGTH = 6;
/** Every secret the CLI issues; anything else that starts with `pk_` is a damaged one. */
const ISSUED = new RegExp(`^pk_(?:${KEY_ENVIRONMENTS.join('|')})_[0-9A-Za-z]{${BODY_LENGTH + CHECKSUM_LENGTH}}$`);

/**
 * A new secret: `pk_<environment>_`, 256 bits from `crypto.randomBytes` in 43 base62 digits, and
 * the CRC-32 of everything before it in 6 base62 digits. Base62 keeps the secret one word for a
 * double click; the checksum lets the gateway refuse a mistyped secret without looking it up.
 */
export function generateSecret(environment: KeyEnvironment): string {
  const body = `pk_${environment}_${base62(BigInt(`0x${randomBytes(RANDOM_BYTES).toString('hex')}`), BODY_LENGTH)}`;
  return body + checksumOf(body);
}

/** Whether `token` claims the issued format: the gateway then checks its checksum before any lookup. */
export function hasIssuedPrefix(token: string): boolean {
  return token.startsWith('pk_');
}

/**
 * Whether `token` is a whole, unaltered issued secret. CRC-32 detects every burst error of up to
 * 32 bits, so any one character changed, anywhere, fails it. It says nothing about whether the
 * secret is known: it is computed from the token alone, and anyone can compute it.
 */
export function checksumMatches(token: string): boolean {
  if (!ISSUED.test(token)) return false;
  const split = token.length - CHECKSUM_LENGTH;
  return checksumOf(token.slice(0, split)) === token.slice(split);
}

/** The last four characters, which `keys list` shows so that an operator can tell secrets apart. */
export function lastFour(secret: string): string {
  return secret.slice(-4);
}

/** In plain numbers (a CRC-32 fits): this runs for every request with an issued secret. */
function checksumOf(text: string): string {
  let value = crc32(text);
  let digits = '';
  for (let index = 0; index < CHECKSUM_LENGTH; index += 1) {
    digits = ALPHABET[value % 62]! + digits;
    value = Math.floor(value / 62);
  }
  return digits;
}

function base62(value: bigint, width: number): string {
  let digits = '';
  for (let index = 0; index < width; index += 1) {
    digits = ALPHABET[Number(value % 62n)]! + digits;
    value /= 62n;
  }
  return digits;
}
