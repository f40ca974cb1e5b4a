import { expect } from 'chai';
import { perPair, perTriple } from '../../../src/observability/metric-children';

describe('metric children', () => {
  it('makes each pair’s value once, and a value per pair', () => {
    const made: string[] = [];
    const of = perPair((a: string, b: number) => (made.push(`${a}${b}`), { a, b }));
    const first = of('x', 1);
    expect(of('x', 1)).to.equal(first);
    expect(of('x', 2)).to.deep.equal({ a: 'x', b: 2 }).and.not.equal(first);
    expect(of('y', 1)).to.deep.equal({ a: 'y', b: 1 });
    expect(made).to.deep.equal(['x1', 'x2', 'y1']);
  });

  it('makes each triple’s value once, and a value per triple', () => {
    const made: string[] = [];
    const of = perTriple((a: string, b: string, c: number) => (made.push(`${a}${b}${c}`), [a, b, c]));
    const first = of('r', 'GET', 200);
    expect(of('r', 'GET', 200)).to.equal(first);
    expect([of('r', 'GET', 404), of('r', 'HEAD', 200), of('s', 'GET', 200)]).to.deep.equal([
      ['r', 'GET', 404],
      ['r', 'HEAD', 200],
      ['s', 'GET', 200],
    ]);
    expect(made).to.deep.equal(['rGET200', 'rGET404', 'rHEAD200', 'sGET200']);
  });
});
