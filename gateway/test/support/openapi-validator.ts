import { expect } from 'chai';
import { compileComponentSchema } from '../../src/json-schema';
import { parseJsonLosslessly } from '../../src/lossless-json-body';
import { openApiDocument, type schemas } from '../../src/openapi';

type PathTemplate = keyof typeof openApiDocument.paths;

interface DocumentedResponse {
  content?: { 'application/json': { schema: { $ref: string } } };
  headers?: Record<string, unknown>;
}

/**
 * Asserts that a response is one the OpenAPI document promises for this operation: a documented
 * status, and a JSON body valid against its schema. Every integration test response goes through
 * here, so the served document and the behaviour cannot drift apart.
 */
export function expectMatchesContract(
  method: 'get' | 'post',
  path: PathTemplate,
  response: { status: number; headers: Headers; text: string },
): unknown {
  const operation = (openApiDocument.paths[path] as Record<string, { responses: Record<string, DocumentedResponse> }>)[method];
  expect(operation, `${method} ${path} is documented`).to.not.equal(undefined);
  const documented = operation!.responses[String(response.status)];
  expect(documented, `${method} ${path} documents status ${response.status}`).to.not.equal(undefined);
  const ref = documented!.content?.['application/json'].schema.$ref;
  if (ref === undefined || method === 'get' && response.text === '') return undefined;
  expect(response.headers.get('content-type')).to.match(/^application\/json/);
  const body = parseJsonLosslessly(response.text);
  const validate = compileComponentSchema(ref.split('/').pop() as keyof typeof schemas);
  expect(validate(body), `${response.text} matches ${ref}: ${JSON.stringify(validate.errors)}`).to.equal(true);
  return body;
}
