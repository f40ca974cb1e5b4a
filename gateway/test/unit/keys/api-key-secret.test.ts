import { expect } from 'chai';
import { checksumMatches, generateSecret, hasIssuedPrefix, lastFour } from '../../../src/keys/api-key-secret';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

describe('API key secrets', () => {
  it('are pk_<environment>_ and 49 base62 characters: 256 random bits and a 6-character checksum', () => {
    expect(generateSecret('live')).to.match(/^pk_live_[0-9A-Za-z]{49}$/);
    expect(generateSecret('test')).to.match(/^pk_test_[0-9A-Za-z]{49}$/);
  });

  it('differ every time, in every position of the random part', () => {
    const secrets = Array.from({ length: 200 }, () => generateSecret('live'));
    expect(new Set(secrets).size).to.equal(200);
    // 256 bits in 43 base62 digits: the first digit takes few values, every other one many.
    for (let position = 9; position < 8 + 43; position += 1) {
      expect(new Set(secrets.map((secret) => secret[position])).size, `position ${position}`).to.be.above(20);
    }
  });

  it('pass their checksum as issued', () => {
    for (let index = 0; index < 50; index += 1) expect(checksumMatches(generateSecret('test'))).to.equal(true);
  });

  it('fail it with any one character changed, anywhere, to any other', () => {
    const secret = generateSecret('live');
    for (let position = 0; position < secret.length; position += 1) {
      for (const replacement of ALPHABET + '_') {
        if (replacement === secret[position]) continue;
        const mistyped = secret.slice(0, position) + replacement + secret.slice(position + 1);
        expect(checksumMatches(mistyped), mistyped).to.equal(false);
      }
    }
  });

  it('fail it when cut short, lengthened, or moved to another environment', () => {
    const secret = generateSecret('live');
    expect(checksumMatches(secret.slice(0, -1))).to.equal(false);
    expect(checksumMatches(`${secret}0`)).to.equal(false);
    expect(checksumMatches(secret.replace('pk_live_', 'pk_test_'))).to.equal(false);
  });

  it('are told from legacy secrets by their prefix', () => {
    expect(hasIssuedPrefix(generateSecret('test'))).to.equal(true);
    expect(hasIssuedPrefix('demo-free-key-0000')).to.equal(false);
  });

  it('show their last four characters only', () => {
    expect(lastFour('pk_live_abcdefgh')).to.equal('efgh');
  });
});
