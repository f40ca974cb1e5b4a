import type { IncomingMessage } from 'node:http';
import { expect } from 'chai';
import type { ApiKey, ApiKeyDirectory, KeyRefusal } from '../../../src/keys/api-keys';
import { AMBIGUOUS_CREDENTIALS, authenticate } from '../../../src/edge/authenticate';
import { ApiError } from '../../../src/http/api-error';

const KEY: ApiKey = { id: 'k', plan: 'free', limits: { perMinute: 60, perDay: 1000 } };

/** A directory that knows `good` and refuses the other secrets it names. */
const directory: ApiKeyDirectory = {
  identify: (secret) => (secret === 'good' ? KEY : ((['expired', 'revoked', 'checksum'] as const).find((reason) => secret === reason) ?? ('unknown' as KeyRefusal))),
};

function requestWith(...authorizations: string[]): IncomingMessage {
  return {
    headers: authorizations.length === 0 ? {} : { authorization: authorizations[0] },
    rawHeaders: authorizations.flatMap((value) => ['Authorization', value]),
  } as unknown as IncomingMessage;
}

function refusalFor(...authorizations: string[]): ApiError {
  const identity = authenticate(requestWith(...authorizations), directory, 0);
  expect(identity).to.be.instanceOf(ApiError);
  return identity as ApiError;
}

describe('authenticate', () => {
  const bare = 'Bearer realm="petstore"';
  const invalid = 'Bearer realm="petstore", error="invalid_token"';

  it('returns the key a well-formed Bearer credential names, in any case of the scheme', () => {
    expect(authenticate(requestWith('Bearer good'), directory, 0)).to.equal(KEY);
    expect(authenticate(requestWith('bearer   good '), directory, 0)).to.equal(KEY);
  });

  for (const authorization of [[], ['Basic dXNlcjpwYXNz'], ['Bearerabc'], ['Token abc']]) {
    it(`challenges without an error when no Bearer credential was sent: ${authorization.join()}`, () => {
      const error = refusalFor(...authorization);
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

  for (const [secret, message] of [
    ['not-a-key', 'unknown API key'],
    ['expired', 'API key expired'],
    ['revoked', 'API key revoked'],
    ['checksum', 'malformed API key: its checksum does not match (was it copied whole?)'],
  ]) {
    it(`answers invalid_token saying the key is refused: ${message}`, () => {
      const error = refusalFor(`Bearer ${secret}`);
      expect(error).to.include({ status: 401, code: 'unauthorized', message });
      expect(error.headers).to.deep.equal({ 'WWW-Authenticate': invalid });
    });
  }

  it('uses neither of two Authorization fields, even when the first names a valid key', () => {
    expect(authenticate(requestWith('Bearer good', 'Bearer other'), directory, 0)).to.equal(AMBIGUOUS_CREDENTIALS);
    expect(AMBIGUOUS_CREDENTIALS).to.include({ status: 400, message: 'Authorization: must be given once' });
  });
});
