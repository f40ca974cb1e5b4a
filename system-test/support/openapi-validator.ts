import Ajv, { type ValidateFunction } from 'ajv';
import { expect } from 'chai';
import { compileComponentSchema } from '../../gateway/src/http/json-schema';
import { parseJsonLosslessly } from '../../gateway/src/http/lossless-json';
import { openApiDocument } from '../../gateway/src/http/openapi/document';
import { PROXIED_PREFIX } from '../../gateway/src/http/openapi/proxied-routes';
import { RATE_LIMIT_HEADERS } from '../../gateway/src/http/openapi/responses';
import type { schemas } from '../../gateway/src/http/openapi/schemas';

type PathTemplate = keyof typeof openApiDocument.paths;
/** The served document: {@link openApiDocument}, with any proxied routes (`openApiDocumentFor`). */
type Document = { paths: object };

interface DocumentedHeader {
  schema: object & { type?: string };
  required?: boolean;
}

interface DocumentedResponse {
  content?: { 'application/json': { schema: { $ref: string } } };
  headers?: Record<string, DocumentedHeader>;
}

type Operations = Record<string, { responses: Record<string, DocumentedResponse> }>;

/** What a test received: the status, the headers, and the body as text. */
export interface ReceivedResponse {
  status: number;
  headers: Headers;
  text: string;
}

/**
 * Asserts that a response is one the OpenAPI document promises for this operation: a documented
 * status, every documented header it must carry and a valid value for each one it does carry,
 * and a JSON body valid against its schema (none for HEAD). Every integration test response goes
 * through here, so the served document and the behaviour cannot drift apart.
 */
export function expectMatchesContract(
  method: string,
  path: PathTemplate | string,
  response: ReceivedResponse,
  document: Document = openApiDocument,
): unknown {
  const operation = ((document.paths as Record<string, Operations>)[path] ?? {})[method === 'head' ? 'get' : method];
  expect(operation, `${method} ${path} is documented`).to.not.equal(undefined);
  // A range (`2XX`) or `default`: a proxied route's upstream answering with a status of its own.
  const documented =
    operation!.responses[String(response.status)] ?? operation!.responses[`${String(response.status)[0]}XX`] ?? operation!.responses.default;
  expect(documented, `${method} ${path} documents status ${response.status}`).to.not.equal(undefined);
  return expectDocumented(`${method} ${path} ${response.status}`, documented!, response, method !== 'head');
}

/**
 * `fetch`, then {@link expectWithinContract} on the response. Resolves to an unread copy of the
 * response, so callers read the body as usual.
 */
export async function fetchWithinContract(url: string, init: RequestInit = {}, document: Document = openApiDocument): Promise<Response> {
  const response = await fetch(url, init);
  const text = await response.text();
  expectWithinContract(init.method ?? 'GET', url, { status: response.status, headers: response.headers, text }, document);
  return new Response(text === '' ? null : text, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/**
 * Asserts that a response to `method url` is what the OpenAPI document promises. Only /v1 is
 * documented (the admin port and other paths are not), and `GET /v1/openapi.json` is the document
 * itself. A /v1 request that no operation documents (another method on a known path, an unknown
 * path) can only be refused before it reaches one, and must then carry what every /v1 refusal
 * carries: the Error body, the rate-limit fields, and the status's own header (Allow on a 405,
 * WWW-Authenticate on a 401, Retry-After on a 429).
 */
export function expectWithinContract(method: string, url: string, response: ReceivedResponse, document: Document = openApiDocument): unknown {
  const { pathname } = new URL(url);
  if (!/^\/v1(?:\/|$)/i.test(pathname)) return undefined;
  const verb = method.toLowerCase();
  const at = `${method} ${pathname} ${response.status}`;
  if (/^\/v1\/openapi\.json\/?$/i.test(pathname)) {
    if (verb === 'get' || verb === 'head') {
      expect(response.status, at).to.equal(200);
      return undefined;
    }
    return expectRefusal(at, [405, 429], response);
  }
  const proxied = proxiedTemplateOf(document, pathname);
  if (proxied !== undefined) {
    const operations = (document.paths as Record<string, Operations>)[proxied]!;
    // A plan the route does not list is refused before the method is looked at.
    if (operations[verb === 'head' ? 'get' : verb] === undefined) return expectRefusal(at, [401, 403, 405, 429], response);
    return expectMatchesContract(verb, proxied, response, document);
  }
  const template = templateOf(pathname);
  if (template === undefined) return expectRefusal(at, [401, 404, 429], response);
  const operations = openApiDocument.paths[template] as Operations;
  if (operations[verb === 'head' ? 'get' : verb] === undefined) {
    // The router decodes a path parameter before it looks at the method.
    return expectRefusal(at, [400, 401, 405, 429], response);
  }
  return expectMatchesContract(verb, template, response);
}

/** The path item of a proxied route that serves `pathname`: its prefix, or `{rest}` below it. */
function proxiedTemplateOf(document: Document, pathname: string): string | undefined {
  for (const [template, item] of Object.entries(document.paths as Record<string, Record<string, unknown>>)) {
    const prefix = item[PROXIED_PREFIX];
    if (typeof prefix !== 'string' || template.endsWith('/{rest}')) continue;
    const path = pathname.toLowerCase();
    if (path === prefix.toLowerCase() || path === `${prefix.toLowerCase()}/`) return template;
    if (path.startsWith(`${prefix.toLowerCase()}/`)) return `${template}/{rest}`;
  }
  return undefined;
}

// Express matches paths case-insensitively and ignores a trailing slash.
function templateOf(pathname: string): PathTemplate | undefined {
  if (/^\/v1\/pets\/?$/i.test(pathname)) return '/pets';
  if (/^\/v1\/pets\/[^/]+\/?$/i.test(pathname)) return '/pets/{petId}';
  return undefined;
}

// listPets documents every refusal but 404 (it has no path parameter to miss), with its headers.
const LIST_PETS = (openApiDocument.paths['/pets'] as Operations).get!;
const UNKNOWN_PATH: DocumentedResponse = {
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
  headers: Object.fromEntries(Object.entries(RATE_LIMIT_HEADERS).map(([name, header]) => [name, { ...header, required: true }])),
};

function expectRefusal(at: string, statuses: readonly number[], response: ReceivedResponse): unknown {
  expect(statuses, `${at}: a refusal before any operation`).to.include(response.status);
  const documented = response.status === 404 ? UNKNOWN_PATH : LIST_PETS.responses[String(response.status)]!;
  return expectDocumented(at, documented, response, true);
}

function expectDocumented(at: string, documented: DocumentedResponse, response: ReceivedResponse, hasBody: boolean): unknown {
  for (const [name, header] of Object.entries(documented.headers ?? {})) expectHeader(`${at}: ${name}`, header, response.headers.get(name));
  const ref = documented.content?.['application/json'].schema.$ref;
  if (ref === undefined || !hasBody) return undefined;
  expect(response.headers.get('content-type'), at).to.match(/^application\/json/);
  const body = parseJsonLosslessly(response.text);
  const validate = compileComponentSchema(ref.split('/').pop() as keyof typeof schemas);
  expect(validate(body), `${at}: ${response.text} matches ${ref}: ${JSON.stringify(validate.errors)}`).to.equal(true);
  return body;
}

const headerAjv = new Ajv({ strict: true });
const headerValidators = new Map<object, ValidateFunction>();

function expectHeader(at: string, header: DocumentedHeader, value: string | null): void {
  if (value === null) {
    expect(header.required === true, `${at} is required`).to.equal(false);
    return;
  }
  let validate = headerValidators.get(header.schema);
  if (validate === undefined) {
    validate = headerAjv.compile(header.schema);
    headerValidators.set(header.schema, validate);
  }
  // A header is text; an integer one must be written as a plain decimal integer.
  const data = header.schema.type === 'integer' && /^-?[0-9]+$/.test(value) ? Number(value) : value;
  expect(validate(data), `${at}: ${JSON.stringify(value)} ${headerAjv.errorsText(validate.errors)}`).to.equal(true);
}
