import { expect } from 'chai';
import { ApiError, MAX_NAMED_FIELDS, UNAVAILABLE_RETRY_AFTER_SECONDS } from '../../../src/http/api-error';

describe('ApiError', () => {
  it('gives every 503 a Retry-After, keeps one a 503 sets itself, and adds none to other statuses', () => {
    expect(new ApiError(503, 'service_unavailable', 'the shared rate-limit store is unreachable; retry').headers).to.deep.equal({
      'Retry-After': String(UNAVAILABLE_RETRY_AFTER_SECONDS),
    });
    expect(new ApiError(503, 'service_unavailable', 'x', { 'Retry-After': '30', Allow: 'GET' }).headers).to.deep.equal({ 'Retry-After': '30', Allow: 'GET' });
    expect(new ApiError(504, 'gateway_timeout', 'x').headers).to.deep.equal({});
    expect(new ApiError(405, 'method_not_allowed', 'x', { Allow: 'GET' }).headers).to.deep.equal({ Allow: 'GET' });
  });

  it('names every invalid field up to MAX_NAMED_FIELDS, in order, and counts the rest', () => {
    const problems = (count: number) => Array.from({ length: count }, (_, index) => `f${index}: is not a known field`);
    expect(ApiError.invalidFields(problems(2)).message).to.equal('f0: is not a known field; f1: is not a known field');
    expect(ApiError.invalidFields(problems(MAX_NAMED_FIELDS)).message.split('; ')).to.have.length(MAX_NAMED_FIELDS);
    const many = ApiError.invalidFields(problems(6665)).message;
    expect(many).to.match(/^f0: .*; f9: is not a known field; and 6655 more invalid fields$/);
    expect(many.length).to.be.below(400);
    expect(ApiError.invalidFields(problems(MAX_NAMED_FIELDS + 1)).message).to.match(/; and 1 more invalid field$/);
  });
});
