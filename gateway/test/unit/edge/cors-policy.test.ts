import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { expect } from 'chai';
import { CORS_EXPOSED_HEADERS, createCorsPolicy } from '../../../src/edge/cors-policy';

/** Applies `policy` to a request with `headers`; returns its verdict and the response's headers. */
function apply(
  policy: NonNullable<ReturnType<typeof createCorsPolicy>>,
  method: string,
  headers: Record<string, string>,
): { preflight: boolean; headers: Record<string, unknown> } {
  const request = new IncomingMessage(new Socket());
  request.method = method;
  request.headers = headers;
  const response = new ServerResponse(request);
  const preflight = policy.apply(request, response);
  return { preflight, headers: response.getHeaders() };
}

describe('CORS policy', () => {
  const methods = ['GET', 'HEAD', 'POST'];
  const policy = createCorsPolicy(['https://app.example.com'], methods)!;

  it('is off for an empty list', () => {
    expect(createCorsPolicy([], methods)).to.equal(undefined);
  });

  it('lets an allowed origin read the response, and says Vary: Origin to every other', () => {
    expect(apply(policy, 'GET', { origin: 'https://app.example.com' })).to.deep.equal({
      preflight: false,
      headers: { vary: 'Origin', 'access-control-allow-origin': 'https://app.example.com', 'access-control-expose-headers': CORS_EXPOSED_HEADERS.join(', ') },
    });
    expect(apply(policy, 'GET', { origin: 'https://other.example.com' })).to.deep.equal({ preflight: false, headers: { vary: 'Origin' } });
    expect(apply(policy, 'GET', {})).to.deep.equal({ preflight: false, headers: { vary: 'Origin' } });
  });

  it('recognises a preflight only from an allowed origin, and only with Access-Control-Request-Method', () => {
    expect(apply(policy, 'OPTIONS', { origin: 'https://app.example.com', 'access-control-request-method': 'POST' }).preflight).to.equal(true);
    expect(apply(policy, 'OPTIONS', { origin: 'https://app.example.com' }).preflight).to.equal(false);
    expect(apply(policy, 'OPTIONS', { origin: 'https://other.example.com', 'access-control-request-method': 'POST' }).preflight).to.equal(false);
    expect(apply(policy, 'POST', { origin: 'https://app.example.com', 'access-control-request-method': 'POST' }).preflight).to.equal(false);
  });

  it('answers a preflight with the methods it was given, the headers the API reads, and a max age', () => {
    expect(policy.preflightHeaders).to.deep.equal({
      'Access-Control-Allow-Methods': 'GET, HEAD, POST',
      'Access-Control-Allow-Headers': 'Authorization, Content-Type, Idempotency-Key, If-Match, If-None-Match, X-Request-Id',
      'Access-Control-Max-Age': '7200',
    });
  });

  it('with * lets every origin read every response, without Vary, and takes preflights from anyone', () => {
    const any = createCorsPolicy('*', methods)!;
    const expected = { 'access-control-allow-origin': '*', 'access-control-expose-headers': CORS_EXPOSED_HEADERS.join(', ') };
    expect(apply(any, 'GET', { origin: 'https://other.example.com' })).to.deep.equal({ preflight: false, headers: expected });
    expect(apply(any, 'GET', {})).to.deep.equal({ preflight: false, headers: expected });
    expect(apply(any, 'OPTIONS', { origin: 'null', 'access-control-request-method': 'GET' }).preflight).to.equal(true);
    expect(apply(any, 'OPTIONS', { 'access-control-request-method': 'GET' }).preflight, 'no Origin: not a CORS request').to.equal(false);
  });
});
