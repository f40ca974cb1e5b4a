import { expect } from 'chai';
import { ApiError, UNAVAILABLE_RETRY_AFTER_SECONDS } from '../../../src/http/api-error';

describe('ApiError', () => {
  it('gives every 503 a Retry-After, keeps one a 503 sets itself, and adds none to other statuses', () => {
    expect(new ApiError(503, 'service_unavailable', 'the shared rate-limit store is unreachable; retry').headers).to.deep.equal({
      'Retry-After': String(UNAVAILABLE_RETRY_AFTER_SECONDS),
    });
    expect(new ApiError(503, 'service_unavailable', 'x', { 'Retry-After': '30', Allow: 'GET' }).headers).to.deep.equal({ 'Retry-After': '30', Allow: 'GET' });
    expect(new ApiError(504, 'gateway_timeout', 'x').headers).to.deep.equal({});
    expect(new ApiError(405, 'method_not_allowed', 'x', { Allow: 'GET' }).headers).to.deep.equal({ Allow: 'GET' });
  });
});
