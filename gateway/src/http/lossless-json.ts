import { parse } from 'lossless-json';

const PLAIN_INTEGER = /^-?(0|[1-9][0-9]*)$/;

/**
 * Parses JSON without rounding any number. An integer literal beyond 2^53 becomes a bigint, so an
 * int64 like 9223372036854775807 survives exactly; a number written any other way that a double
 * cannot hold exactly (`9.3e18`, say) becomes NaN, which every numeric check rejects, rather than
 * a silently rounded value.
 *
 * @throws SyntaxError for text that is not JSON.
 */
export function parseJsonLosslessly(text: string): unknown {
  return parse(text, null, parseNumber);
}

function parseNumber(literal: string): number | bigint {
  const value = Number(literal);
  if (Number.isSafeInteger(value) || !Number.isInteger(value)) {
    return PLAIN_INTEGER.test(literal) || Number.isFinite(value) ? value : Number.NaN;
  }
  return PLAIN_INTEGER.test(literal) ? BigInt(literal) : Number.NaN;
}
