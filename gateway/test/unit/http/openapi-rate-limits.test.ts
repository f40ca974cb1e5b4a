import { expect } from 'chai';
import { openApiDocument } from '../../../src/http/openapi/document';

describe('openapi: rate-limit headers', () => {
  const responses = Object.entries(openApiDocument.paths).flatMap(([path, operations]) =>
    Object.entries(operations as Record<string, { responses: Record<string, { headers?: Record<string, unknown> }> }>).flatMap(
      ([method, operation]) => Object.entries(operation.responses).map(([status, response]) => ({ at: `${method} ${path} ${status}`, status, response })),
    ),
  );

  it('documents the rate-limit fields on every response', () => {
    expect(responses.length).to.be.greaterThan(10);
    for (const { at, response } of responses) {
      expect(Object.keys(response.headers ?? {}), at).to.include.members([
        'X-RateLimit-Limit',
        'X-RateLimit-Remaining',
        'X-RateLimit-Reset',
        'RateLimit-Policy',
        'RateLimit',
      ]);
    }
  });

  it('documents Retry-After, required, on 429 and on the pets operations\' 503 (every one the gateway gives), and keeps the headers a response already had', () => {
    for (const { at, status, response } of responses) {
      const retryAfter = response.headers?.['Retry-After'] as { required?: boolean } | undefined;
      const pets = at.includes(' /pets');
      expect(retryAfter !== undefined, at).to.equal(status === '429' || (status === '503' && pets));
      if (retryAfter !== undefined) expect(retryAfter.required === true, at).to.equal(true);
    }
    const created = responses.find(({ at }) => at === 'post /pets 201')!;
    expect(created.response.headers).to.have.property('Location');
  });
});
