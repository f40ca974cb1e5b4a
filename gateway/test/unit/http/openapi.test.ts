import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { ERROR_CODE_TABLE, ERROR_CODES, errorCodeMarkdown } from '../../../src/http/api-error';
import { compileComponentSchema } from '../../../src/http/json-schema';
import { openApiDocument } from '../../../src/http/openapi/document';
import { RATE_LIMIT_HEADERS } from '../../../src/http/openapi/responses';
import { schemas } from '../../../src/http/openapi/schemas';

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

describe('openapi: examples and descriptions say what the gateway does', () => {
  type Example = { value: { message: string } };
  const example400 = (operationId: string): string => {
    const operation = operations.find((candidate) => candidate.operationId === operationId)!;
    const content = (operation.responses['400'] as unknown as { content: Record<string, { examples: Record<string, Example> }> }).content;
    return content['application/json']!.examples.invalid_request!.value.message;
  };

  it("gives each operation's 400 an example about its own input", () => {
    expect(example400('listPets')).to.match(/^(limit|status|cursor): /);
    expect(example400('getPet')).to.match(/^petId: /);
    expect(example400('createPet')).to.match(/^(name|categoryId|status|body): /);
  });

  it('describes RateLimit as every window, as responses carry it', () => {
    expect(RATE_LIMIT_HEADERS.RateLimit.description).to.include('every window');
    expect(RATE_LIMIT_HEADERS.RateLimit.example).to.include('"day"');
  });
});

describe('openapi: the content the API reference at /docs shows', () => {
  const root = join(__dirname, '..', '..', '..', '..');

  it('introduces the document with the rate-limit and deprecation headers and the error-code table', () => {
    const intro = openApiDocument.info.description;
    for (const heading of ['Authentication', 'Rate limits', 'Pagination', 'Deprecation', 'Errors']) expect(intro).to.include(`## ${heading}\n`);
    for (const name of [...Object.keys(RATE_LIMIT_HEADERS), 'Deprecation', 'Sunset', 'Retry-After', 'rel="next"']) expect(intro).to.include(name);
    expect(intro).to.include(errorCodeMarkdown());
  });

  it('renders one table row per code, in the order of the one source', () => {
    const rows = errorCodeMarkdown().split('\n').slice(2);
    expect(rows.map((row) => row.split('`')[1])).to.deep.equal([...ERROR_CODES]);
    expect(rows[0]).to.equal(`| \`invalid_request\` | 400, 408, 417, 431, 501, 505 | ${ERROR_CODE_TABLE.invalid_request.when} |`);
  });

  it("keeps docs/api.md's error-code table identical to the one source", () => {
    const apiMd = readFileSync(join(root, 'docs', 'api.md'), 'utf8');
    expect(apiMd, 'paste errorCodeMarkdown() into docs/api.md').to.include(`\n${errorCodeMarkdown()}\n`);
  });

  it("gives every error response an example per listed code, valid against Error and with the response's status", () => {
    const validateError = compileComponentSchema('Error');
    let examples = 0;
    for (const { operationId, responses } of operations) {
      for (const [status, response] of Object.entries(responses as Record<string, ExampledResponse>)) {
        const media = response.content?.['application/json'];
        if (media?.schema.$ref !== '#/components/schemas/Error') continue;
        const listed = /Error codes: ([a-z_, ]+)\.$/.exec(response.description)![1]!.split(', ');
        expect(Object.keys(media.examples ?? {}), `${operationId} ${status}`).to.deep.equal(listed);
        for (const { value } of Object.values(media.examples!)) {
          expect(validateError(value), `${operationId} ${status} ${JSON.stringify(value)}`).to.equal(true);
          expect(value.status, `${operationId} ${status}`).to.equal(Number(status));
          examples += 1;
        }
      }
    }
    expect(examples).to.be.greaterThan(20);
  });

  it('gives the schemas examples that their own validators accept', () => {
    for (const name of ['NewPet', 'Pet', 'Pets', 'Error'] as const) {
      const validate = compileComponentSchema(name);
      const { examples } = schemas[name];
      expect(examples, name).to.have.length.greaterThan(0);
      for (const example of examples) expect(validate(example), `${name} ${JSON.stringify(example)}`).to.equal(true);
    }
  });
});

interface ExampledResponse {
  description: string;
  content?: { 'application/json'?: { schema: { $ref?: string }; examples?: Record<string, { value: { status: number } }> } };
}
