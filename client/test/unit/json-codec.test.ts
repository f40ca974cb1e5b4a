import { expect } from 'chai';
import { decodeErrorBody, decodePet, encodeNewPet, parseLosslessly } from '../../src/json-codec';

describe('json codec', () => {
  const text = '{"id":9223372036854775807,"name":"Rex","categoryId":9007199254740993,"status":"sold"}';

  it('decodes int64 fields beyond 2^53 exactly, as bigint or as decimal text', () => {
    expect(decodePet(parseLosslessly(text), 'bigint')).to.deep.equal({
      id: 9223372036854775807n,
      name: 'Rex',
      categoryId: 9007199254740993n,
      status: 'sold',
    });
    expect(decodePet(parseLosslessly(text), 'string')).to.deep.include({ id: '9223372036854775807', categoryId: '9007199254740993' });
  });

  it('refuses what is not a Pet rather than guessing', () => {
    for (const bad of [
      '{"id":"1","name":"Rex","categoryId":1,"status":"sold"}',
      '{"id":1.5,"name":"Rex","categoryId":1,"status":"sold"}',
      '{"id":9223372036854775808,"name":"Rex","categoryId":1,"status":"sold"}',
      '{"id":1,"name":"Rex","categoryId":1,"status":"lost"}',
      '{"id":1,"categoryId":1,"status":"sold"}',
      '[]',
    ]) {
      expect(decodePet(parseLosslessly(bad), 'bigint'), bad).to.equal(undefined);
    }
  });

  it('writes a bigint or decimal-string categoryId as a number literal, digit for digit', () => {
    expect(encodeNewPet({ name: 'Rex', categoryId: 9223372036854775807n })).to.equal('{"name":"Rex","categoryId":9223372036854775807}');
    expect(encodeNewPet({ name: 'Rex', categoryId: '9007199254740993', status: 'pending' })).to.equal(
      '{"name":"Rex","categoryId":9007199254740993,"status":"pending"}',
    );
    expect(encodeNewPet({ name: 'Rex', categoryId: 7 })).to.equal('{"name":"Rex","categoryId":7}');
  });

  it('refuses a categoryId that may already be rounded, or is not plain decimal', () => {
    expect(() => encodeNewPet({ name: 'Rex', categoryId: 2 ** 60 })).to.throw(RangeError, /bigint or a string/);
    expect(() => encodeNewPet({ name: 'Rex', categoryId: '1e3' })).to.throw(RangeError, /plain decimal/);
    expect(() => encodeNewPet({ name: 'Rex', categoryId: '9223372036854775808' })).to.throw(RangeError, 'categoryId "9223372036854775808" is not a positive int64 in plain decimal');
  });

  it('decodes the Error body', () => {
    expect(decodeErrorBody(parseLosslessly('{"code":"not_found","message":"pet 1 not found","status":404}'))).to.deep.equal({
      code: 'not_found',
      message: 'pet 1 not found',
      status: 404,
    });
    expect(decodeErrorBody(parseLosslessly('{"error":"nope"}'))).to.equal(undefined);
  });
});
