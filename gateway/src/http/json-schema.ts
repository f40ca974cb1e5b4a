import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import { INT64_MAX, NAME_LENGTH_PROBLEM, NAME_PATTERN, NAME_PATTERN_PROBLEM, PAGE_TOKEN_PATTERN, PAGE_TOKEN_PROBLEM } from '@petstore/proto';
import { LIST_QUERY, schemas } from './openapi/schemas';

/**
 * Compiles the OpenAPI component schemas with ajv. JSON bodies are parsed losslessly (see
 * `lossless-json-body.ts`), so an int64 beyond 2^53 arrives as a bigint, which ajv's `integer`
 * does not accept; each `format: int64` node is therefore compiled as the `int64` keyword, which
 * checks number and bigint alike against exact bounds.
 */
export function compileComponentSchema(name: keyof typeof VALIDATED): ValidateFunction {
  return ajv().getSchema(`${SCHEMA_ID}#/components/schemas/${name}`)!;
}

/**
 * `field: problem` for every invalid field, naming each as the client wrote it: one problem per
 * field (the first the schema finds), in the order the schema checks them (its properties' order),
 * so that a client fixes every field in one round trip (AIP-193) and reads the same message twice.
 */
export function describeErrors(errors: readonly ErrorObject[] | null | undefined, root: string): string[] {
  if (errors === null || errors === undefined || errors.length === 0) return [`${root}: is invalid`];
  const byField = new Map<string, string>();
  for (const error of errors) {
    const described = describeError(error, root);
    const field = described.slice(0, described.indexOf(': '));
    if (!byField.has(field)) byField.set(field, described);
  }
  return [...byField.values()];
}

function describeError(error: ErrorObject, root: string): string {
  const path = error.instancePath.split('/').slice(1).join('.');
  if (error.keyword === 'required') return `${join(path, String(error.params.missingProperty))}: is required`;
  if (error.keyword === 'additionalProperties') {
    return `${join(path, String(error.params.additionalProperty))}: is not a known field`;
  }
  if (error.keyword === 'pattern') return `${path || root}: ${PATTERN_PROBLEMS[String(error.params.pattern)] ?? error.message}`;
  if ((error.keyword === 'minLength' || error.keyword === 'maxLength') && LENGTH_PROBLEMS[path] !== undefined) return `${path}: ${LENGTH_PROBLEMS[path]}`;
  if (error.keyword === 'enum') return `${path || root}: must be one of ${(error.params.allowedValues as string[]).join(', ')}`;
  return `${path || root}: ${error.message ?? 'is invalid'}`;
}

/**
 * What a field outside its length bounds is told: the words the pet service uses for the same
 * rule (proto/contract.ts), so HTTP and gRPC callers read one message.
 */
const LENGTH_PROBLEMS: Readonly<Record<string, string>> = { name: NAME_LENGTH_PROBLEM };

/** What a value that misses a pattern is told, in words rather than as the pattern. */
const PATTERN_PROBLEMS: Readonly<Record<string, string>> = {
  [NAME_PATTERN.source]: NAME_PATTERN_PROBLEM,
  [PAGE_TOKEN_PATTERN.source]: PAGE_TOKEN_PROBLEM,
};

/** The document's component schemas, and the list query's, which the document gives as parameters. */
const VALIDATED = { ...schemas, ListQuery: LIST_QUERY };
const SCHEMA_ID = 'petstore-openapi';
let shared: Ajv | undefined;

function ajv(): Ajv {
  if (shared !== undefined) return shared;
  // Every error, not the first: a 400 names every invalid field.
  shared = new Ajv({ allErrors: true, strict: true, strictTypes: false, useDefaults: true });
  shared.addKeyword({
    keyword: 'int64',
    schemaType: 'object',
    error: { message: 'must be a positive int64' },
    validate: (bounds: { minimum: number }, data: unknown) => {
      const value = typeof data === 'bigint' ? data : Number.isSafeInteger(data) ? BigInt(data as number) : undefined;
      return value !== undefined && value >= BigInt(bounds.minimum) && value <= INT64_MAX;
    },
  });
  shared.addKeyword('components');
  shared.addSchema({ $id: SCHEMA_ID, components: { schemas: toAjvSchema(VALIDATED) } });
  return shared;
}

function toAjvSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(toAjvSchema);
  if (node === null || typeof node !== 'object') return node;
  const record = node as Record<string, unknown>;
  if (record.format === 'int64') return { int64: { minimum: record.minimum }, description: record.description };
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, toAjvSchema(value)]));
}

function join(path: string, field: string): string {
  return path === '' ? field : `${path}.${field}`;
}
