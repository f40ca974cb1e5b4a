import { expect } from 'chai';
import { jsonTextProblem, MAX_JSON_DEPTH, parseJsonLosslessly } from '../../../src/http/lossless-json';

describe('parseJsonLosslessly', () => {
  it('keeps safe numbers as numbers and big integers as exact bigints', () => {
    expect(parseJsonLosslessly('[1, -2, 1.5, 9007199254740991, 9007199254740993, 9223372036854775807]')).to.deep.equal([
      1, -2, 1.5, 9007199254740991, 9007199254740993n, 9223372036854775807n,
    ]);
  });

  // Issue 17: 1.0 and 1E2 were taken, 1e18 refused. One rule: an integer-valued number is that
  // integer, exactly, however it is written.
  it('reads every integer-valued number as that integer exactly, however it is written', () => {
    expect(parseJsonLosslessly('[1.0, 1E2, 1e18, 9.2e18, 92233720368547758.07e2, 1.5e1, 0.0, 100e-2, 2E+1]')).to.deep.equal([
      1, 100, 1000000000000000000n, 9200000000000000000n, 9223372036854775807n, 15, 0, 1, 20,
    ]);
  });

  it('reads an integer written with an exponent beyond int64 exactly, so the range check sees it', () => {
    expect(parseJsonLosslessly('9.3e18')).to.equal(9300000000000000000n);
  });

  it('turns integers of more than 20 digits written with an exponent into NaN, without building them', () => {
    for (const text of ['1e400', '1e999999999', '-1e21']) expect(Number.isNaN(parseJsonLosslessly(text)), text).to.equal(true);
  });

  it('turns a fraction that a double would round to an integer into NaN, never that integer', () => {
    for (const text of ['1.0000000000000000001', '1e-400', '9007199254740992.5']) {
      expect(Number.isNaN(parseJsonLosslessly(text)), text).to.equal(true);
    }
    expect(parseJsonLosslessly('[1.5, -0.25]')).to.deep.equal([1.5, -0.25]);
  });

  it('keeps __proto__ as an own key without touching the prototype', () => {
    const parsed = parseJsonLosslessly('{"__proto__":{"polluted":true}}') as Record<string, unknown>;
    expect(Object.keys(parsed)).to.deep.equal(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
  });

  it('throws on text that is not JSON', () => {
    for (const text of ['{', '{"a":1,}', "{'a':1}", 'NaN', '01']) expect(() => parseJsonLosslessly(text), text).to.throw();
  });
});

describe('jsonTextProblem', () => {
  const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

  // Issue 17: 32,000 levels overflowed the parser, which then said "is not valid JSON".
  it(`allows ${MAX_JSON_DEPTH} levels of nesting and refuses one more, before the parser sees it`, () => {
    expect(jsonTextProblem(nested(MAX_JSON_DEPTH))).to.equal(undefined);
    expect(jsonTextProblem(`{"a":${nested(MAX_JSON_DEPTH - 1)}}`)).to.equal(undefined);
    expect(jsonTextProblem(nested(MAX_JSON_DEPTH + 1))).to.equal(`nested more than ${MAX_JSON_DEPTH} levels deep`);
    expect(jsonTextProblem(`{"a":${nested(32_000)}}`)).to.equal(`nested more than ${MAX_JSON_DEPTH} levels deep`);
  });

  it('does not count brackets inside strings, nor escaped quotes as their end', () => {
    expect(jsonTextProblem(`{"name":"${'['.repeat(100)}\\"${'{'.repeat(100)}"}`)).to.equal(undefined);
  });

  it('refuses escapes of unpaired surrogates, high or low, anywhere', () => {
    for (const text of ['"\\ud800"', '"\\uDBFF x"', '"\\udc00"', '{"\\ud83d":1}', '"\\ud83d\\u0041"', '"a\\ud83d"', '"\\\\\\ud800"']) {
      expect(jsonTextProblem(text), text).to.match(/unpaired UTF-16 surrogate/);
    }
  });

  it('accepts surrogate pairs, other escapes, and a backslash before u that is itself escaped', () => {
    for (const text of ['"\\ud83d\\udc36"', '"\\uD83D\\uDC36"', '"\\u0041\\n\\"\\\\"', '"\\\\ud800"', '"🐶"']) {
      expect(jsonTextProblem(text), text).to.equal(undefined);
    }
  });
});
