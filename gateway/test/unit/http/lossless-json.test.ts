import { expect } from 'chai';
import { parseJsonLosslessly } from '../../../src/http/lossless-json';

describe('parseJsonLosslessly', () => {
  it('keeps safe numbers as numbers and big integers as exact bigints', () => {
    expect(parseJsonLosslessly('[1, -2, 1.5, 9007199254740991, 9007199254740993, 9223372036854775807]')).to.deep.equal([
      1, -2, 1.5, 9007199254740991, 9007199254740993n, 9223372036854775807n,
    ]);
  });

  it('turns numbers a double cannot hold exactly into NaN rather than rounding them', () => {
    const [rounded, infinite] = parseJsonLosslessly('[9.3e18, 1e400]') as number[];
    expect(Number.isNaN(rounded)).to.equal(true);
    expect(Number.isNaN(infinite)).to.equal(true);
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
