import { parse } from 'lossless-json';

/** Deepest nesting of arrays and objects a JSON body may have; a pet is 1 deep. */
export const MAX_JSON_DEPTH = 64;

const SAFE_PLAIN_INTEGER = /^-?(0|[1-9][0-9]{0,14})$/;
const NUMBER = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/;
/** More digits than any int64 has: such an integer is out of range whatever it is exactly. */
const MAX_INTEGER_DIGITS = 20;

/**
 * Parses JSON without rounding any number. Every number whose value is an integer, however it is
 * written (`100`, `100.0`, `1E2`, `9.2e18`), is that integer exactly: a number, or a bigint beyond
 * 2^53, so an int64 like 9223372036854775807 survives. One with more than 20 digits, beyond every
 * int64, is NaN, which every numeric check rejects; so is a literal with a fractional part that a
 * double would round to an integer (`1.0000000000000000001`). Other fractions stay numbers.
 *
 * Call {@link jsonTextProblem} first: the parser recurses, and deep nesting overflows its stack.
 *
 * @throws SyntaxError for text that is not JSON.
 */
export function parseJsonLosslessly(text: string): unknown {
  return parse(text, null, parseNumber);
}

/**
 * What makes JSON text unfit before it is parsed, if anything: nesting deeper than
 * {@link MAX_JSON_DEPTH}, or a `\u` escape of an unpaired UTF-16 surrogate (`"\ud800"`), which
 * stands for no character: stored, it would be replaced by U+FFFD. Text that is not JSON passes;
 * the parser rejects it.
 */
export function jsonTextProblem(text: string): string | undefined {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === 0x22) inString = false;
      else if (code === 0x5c) {
        if (text.charCodeAt(index + 1) !== 0x75) {
          index += 1;
          continue;
        }
        const unit = hexUnit(text, index + 2);
        if (unit >= 0xdc00 && unit <= 0xdfff) return UNPAIRED;
        if (unit >= 0xd800 && unit <= 0xdbff) {
          const low = text.charCodeAt(index + 6) === 0x5c && text.charCodeAt(index + 7) === 0x75 ? hexUnit(text, index + 8) : -1;
          if (low < 0xdc00 || low > 0xdfff) return UNPAIRED;
          index += 6;
        }
        index += 5;
      }
    } else if (code === 0x22) inString = true;
    else if (code === 0x5b || code === 0x7b) {
      depth += 1;
      if (depth > MAX_JSON_DEPTH) return TOO_DEEP;
    } else if (code === 0x5d || code === 0x7d) depth -= 1;
  }
  return undefined;
}

const UNPAIRED = 'escapes an unpaired UTF-16 surrogate (\\ud800 to \\udfff alone), which is no character';
const TOO_DEEP = `nested more than ${MAX_JSON_DEPTH} levels deep`;

/** The four hex digits at `index` as a number, or -1 if they are not four hex digits. */
function hexUnit(text: string, index: number): number {
  const digits = text.slice(index, index + 4);
  return /^[0-9A-Fa-f]{4}$/.test(digits) ? Number.parseInt(digits, 16) : -1;
}

function parseNumber(literal: string): number | bigint {
  if (SAFE_PLAIN_INTEGER.test(literal)) return Number(literal);
  const integer = exactInteger(literal);
  if (integer === undefined) {
    const value = Number(literal);
    return Number.isInteger(value) ? Number.NaN : value;
  }
  if (integer === null) return Number.NaN;
  return integer >= BigInt(Number.MIN_SAFE_INTEGER) && integer <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(integer) : integer;
}

/**
 * The exact value of a JSON number literal if it is an integer; undefined if it is not; null if it
 * is an integer of more than {@link MAX_INTEGER_DIGITS} digits (never built: `1e999999999` would
 * take a billion digits).
 */
function exactInteger(literal: string): bigint | null | undefined {
  const [, sign, whole, fraction = '', exponent = '0'] = NUMBER.exec(literal)!;
  const digits = (whole! + fraction).replace(/^0+/, '');
  if (digits === '') return 0n;
  const significant = digits.replace(/0+$/, '');
  // The value is significant × 10^scale.
  const scale = Number(exponent) - fraction.length + (digits.length - significant.length);
  if (scale < 0) return undefined;
  if (significant.length + scale > MAX_INTEGER_DIGITS) return null;
  return BigInt(`${sign}${significant}${'0'.repeat(scale)}`);
}
