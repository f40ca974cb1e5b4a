import { expect } from 'chai';
import type { NextFunction, Request, Response } from 'express';
import { ApiError } from '../../../src/http/api-error';
import { requireApiKey } from '../../../src/edge/authenticate';

/** What requireApiKey passes on for a request with this Authorization header and no identified key. */
function refusalFor(authorization: string | undefined, locals: Record<string, unknown> = {}): ApiError {
  let passed: unknown;
  const request = { headers: authorization === undefined ? {} : { authorization } } as Request;
  void requireApiKey(request, { locals } as unknown as Response, ((error?: unknown) => (passed = error)) as NextFunction);
  expect(passed).to.be.instanceOf(ApiError);
  return passed as ApiError;
}

describe('requireApiKey', () => {
  const bare = 'Bearer realm="petstore"';
  const invalid = 'Bearer realm="petstore", error="invalid_token"';

  for (const authorization of [undefined, 'Basic dXNlcjpwYXNz', 'Bearerabc', 'Token abc']) {
    it(`challenges without an error when no Bearer credential was sent: ${authorization}`, () => {
      const error = refusalFor(authorization);
      expect(error).to.include({ status: 401, code: 'unauthorized', message: 'missing bearer API key' });
      expect(error.headers).to.deep.equal({ 'WWW-Authenticate': bare });
    });
  }

  for (const authorization of ['Bearer abc def', 'Bearer', 'bearer a"b', 'BEARER  =abc']) {
    it(`answers invalid_token for a malformed Bearer credential: ${authorization}`, () => {
      const error = refusalFor(authorization);
      expect(error).to.include({ status: 401, code: 'unauthorized', message: 'malformed bearer API key' });
      expect(error.headers).to.deep.equal({ 'WWW-Authenticate': invalid });
    });
  }

  it('answers invalid_token for a well-formed but unknown Bearer credential', () => {
    const error = refusalFor('bearer not-a-key');
    expect(error).to.include({ message: 'unknown API key' });
    expect(error.headers).to.deep.equal({ 'WWW-Authenticate': invalid });
  });

  for (const [keyRefusal, message] of [
    ['expired', 'API key expired'],
    ['revoked', 'API key revoked'],
    ['checksum', 'malformed API key: its checksum does not match (was it copied whole?)'],
  ]) {
    it(`answers invalid_token saying the key is ${keyRefusal} when the edge refused it so`, () => {
      const error = refusalFor('Bearer pk_live_x', { keyRefusal });
      expect(error).to.include({ status: 401, code: 'unauthorized', message });
      expect(error.headers).to.deep.equal({ 'WWW-Authenticate': invalid });
    });
  }

  it('lets a request through once the rate-limit edge has identified its key', () => {
    let passed: unknown = 'not called';
    const locals = { apiKey: { id: 'k', plan: 'free', limits: { perMinute: 60, perDay: 1000 } } };
    void requireApiKey({ headers: {} } as Request, { locals } as unknown as Response, ((error?: unknown) => (passed = error)) as NextFunction);
    expect(passed).to.equal(undefined);
  });
});
