import { expect } from 'chai';
import { ETAG_CONDITION_PATTERN, MAX_ETAG_CONDITION_LENGTH, parseEtagCondition, weaklyMatches } from '../../contract';

describe('entity-tag conditions (If-Match, If-None-Match, UpdatePetRequest.etag)', () => {
  it('reads * and lists of entity tags: the versions of the strong tags of ours, weak and foreign tags matching none', () => {
    expect(parseEtagCondition('*')).to.deep.equal({ any: true });
    expect(parseEtagCondition(' "1", "3" ,W/"4","x"')).to.deep.equal({ any: false, versions: [1, 3] });
  });

  it('accepts and ignores empty list elements (RFC 9110 section 5.6.1.2), wherever they stand', () => {
    const lists: Array<[string, number[]]> = [
      ['"0",', [0]],
      ['"x", , "0"', [0]],
      [', "2"', [2]],
      [',,"1",,\t, "4" ,', [1, 4]],
    ];
    for (const [value, versions] of lists) {
      expect(ETAG_CONDITION_PATTERN.test(value), value).to.equal(true);
      expect(parseEtagCondition(value), value).to.deep.equal({ any: false, versions });
    }
    expect(weaklyMatches('W/"7", ,', '"7"')).to.equal(true);
  });

  it('refuses a value with no entity tag, a * in a list, tags without a comma between them, and a value over the bound', () => {
    for (const value of ['', ',', ' , ,', '*,', '"1", *', '"1""2"', '"1" "2"', 'W/ "1"', '1', `"${'1'.repeat(MAX_ETAG_CONDITION_LENGTH)}"`]) {
      expect(parseEtagCondition(value), value).to.equal(undefined);
    }
  });
});
