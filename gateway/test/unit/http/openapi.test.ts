import { expect } from 'chai';
import { openApiDocument } from '../../../src/http/openapi';

type Responses = Record<string, { description: string; headers?: Record<string, { required?: boolean }> }>;
const operations = Object.values(openApiDocument.paths).flatMap((path) =>
  Object.values(path as Record<string, { operationId: string; responses: Responses }>),
);

describe('openapi: errors and deprecation', () => {
  it('documents 403 forbidden on every operation, since the gRPC table maps PERMISSION_DENIED to it', () => {
    expect(operations).to.have.length.greaterThan(2);
    for (const { operationId, responses } of operations) expect(responses['403']?.description, operationId).to.include('forbidden');
  });

  it("marks getPet's own responses, errors included, with the deprecation fields", () => {
    const getPet = operations.find(({ operationId }) => operationId === 'getPet')!;
    const required = (status: string, name: string) => getPet.responses[status]!.headers?.[name]?.required;
    for (const name of ['Deprecation', 'Sunset', 'Link']) {
      for (const status of ['200', '404', '410']) expect(required(status, name), `${status} ${name}`).to.equal(true);
      for (const status of ['400', '403', '429', '503']) expect(required(status, name), `${status} ${name}`).to.equal(false);
      for (const status of ['401', '405']) expect(getPet.responses[status]!.headers, `${status}`).to.not.have.property(name);
    }
  });
});
