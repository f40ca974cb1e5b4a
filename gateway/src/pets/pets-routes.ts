import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseQuery } from 'node:querystring';
import type { Tracer } from '@opentelemetry/api';
import {
  ETAG_CONDITION_PROBLEM,
  IDEMPOTENCY_KEY_PROBLEM,
  isPositiveInt64,
  ONE_VALUE_PROBLEM,
  parseEtagCondition,
  versionOfEtag,
  weaklyMatches,
} from '@petstore/proto';
import { NON_RECORDING_TRACER } from '@petstore/runtime';
import parseUrl from 'parseurl';
import type { ServedRoutes } from '../edge/front-door';
import type { RequestContext } from '../edge/request-context';
import type { PetClient } from '../pet-service-client/pet-client';
import { tracedCall } from '../pet-service-client/traced-call';
import { ApiError } from '../http/api-error';
import { markDeprecated } from '../http/deprecation';
import { methodNotAllowed, sendApiError, toApiError, type InternalErrorListener } from '../http/error-handler';
import { PET_SERVICE_OVER_CAPACITY } from '../http/grpc-status-to-http';
import { compileComponentSchema, describeErrors } from '../http/json-schema';
import { type JsonMediaTypes, readJsonBody } from '../http/json-body';
import { sendJson } from '../http/send-json';
import { fieldCount } from '../http/raw-headers';
import { toWireStatus } from '../http/pet-json';
import { listPetsResponseToJson, petResponseToJson } from '../http/pet-json-from-wire';

export interface PetsRoutesOptions {
  readonly petClient: PetClient;
  /** Milliseconds since the epoch; injected so tests can move time. */
  readonly now: () => number;
  /** Told of every error that became a 500. */
  readonly onInternalError: InternalErrorListener;
  /** Told of every request answered 503 because the pet service shed it (over capacity). */
  readonly onShed?: (route: string, method: string) => void;
  /** Starts the client spans of the calls to the pet service; default: none recorded. */
  readonly tracer?: Tracer;
}

interface NewPetBody {
  name: string;
  categoryId: number | bigint;
  status: string;
}

interface PetPatchBody {
  name?: string;
  categoryId?: number | bigint;
  status?: string;
}

interface ListQuery {
  limit: number;
  status?: string;
  cursor?: string;
}

/** The route templates, as logs and metrics name them. */
export const LIST_ROUTE = '/v1/pets';
export const PET_ROUTE = '/v1/pets/:petId';

// Matched as express's router matches a route: case-insensitively, one trailing slash allowed, a
// parameter being one or more characters up to the next slash, percent-decoded.
const LIST_PATH = /^\/v1\/pets\/?$/i;
const PET_PATH = /^\/v1\/pets\/([^/]+)\/?$/i;

/** The route label of a path the pets routes serve, else undefined. */
function routeOf(path: string): string | undefined {
  return LIST_PATH.test(path) ? LIST_ROUTE : PET_PATH.test(path) ? PET_ROUTE : undefined;
}

const validateNewPet = compileComponentSchema('NewPet');
const validatePetPatch = compileComponentSchema('PetPatch');
const validateIdempotencyKey = compileComponentSchema('IdempotencyKey');
const validateListQuery = compileComponentSchema('ListQuery');
const LIST_PARAMETERS = ['limit', 'status', 'cursor'] as const;
const LIST_METHODS = methodNotAllowed('GET, HEAD, POST');
const PET_METHODS = methodNotAllowed('GET, HEAD, PATCH, DELETE');
const UNDECODABLE_PET_ID = ApiError.invalid('petId', 'malformed percent-encoding');
const NOT_A_PET_ID = ApiError.invalid('petId', 'must be a positive int64');
/** A decimal integer written with a leading zero (`05`): refused as such, not as "not an integer". */
const LEADING_ZERO = /^0[0-9]+$/;
const leadingZero = (name: string): ApiError => ApiError.invalid(name, 'must be written without a leading zero');
const LIMIT_LEADING_ZERO = leadingZero('limit');
const PET_ID_LEADING_ZERO = leadingZero('petId');
const NOT_AN_OBJECT = ApiError.invalid('body', 'must be a JSON object');
const BAD_IDEMPOTENCY_KEY = ApiError.invalid('Idempotency-Key', IDEMPOTENCY_KEY_PROBLEM);
const TWO_IDEMPOTENCY_KEYS = ApiError.invalid('Idempotency-Key', ONE_VALUE_PROBLEM);
/** The media types of a PATCH body (RFC 5789): a JSON Merge Patch, or plain JSON read as one. */
const ACCEPT_PATCH = 'application/merge-patch+json, application/json';
const MERGE_PATCH: JsonMediaTypes = {
  types: ['application/merge-patch+json', 'application/json'],
  refusal: new ApiError(415, 'unsupported_media_type', 'body: Content-Type must be application/merge-patch+json or application/json', {
    'Accept-Patch': ACCEPT_PATCH,
  }),
};
const PATCH_FIELDS = ['name', 'categoryId', 'status'] as const;
const EMPTY_PATCH = ApiError.invalid('body', 'names no field to change: send name, categoryId or status');
const NO_IF_NONE_MATCH = ApiError.invalid('If-None-Match', 'is evaluated on GET only; send If-Match to make a change conditional');

/**
 * `/v1/pets` and `/v1/pets/{petId}`, the product's hot path: JSON in, one gRPC call each, JSON
 * out, written straight from the answer's protobuf bytes (pet-json-from-wire.ts), on `node:http`
 * without express's router, whose per-request machinery (layers, path
 * matching, `next` chains, prototype swaps) costs more than these routes themselves. They answer
 * exactly as express would: the same statuses, headers, Error bodies and 405s with `Allow`; HEAD
 * is served as GET.
 */
export function createPetsRoutes({ petClient, now, onInternalError, onShed, tracer = NON_RECORDING_TRACER }: PetsRoutesOptions): ServedRoutes {
  const fail = (request: IncomingMessage, response: ServerResponse, context: RequestContext, error: unknown): void => {
    // The client went away and its call was cancelled for it: there is nobody to answer.
    if (context.cancel?.signal.aborted === true) return;
    const apiError = toApiError(error);
    if (apiError.code === 'internal') onInternalError(error);
    else if (apiError === PET_SERVICE_OVER_CAPACITY) onShed?.(context.route!, request.method!);
    sendApiError(request, response, apiError);
  };

  const listPets = async (request: IncomingMessage, response: ServerResponse, context: RequestContext): Promise<void> => {
    const query = readListQuery(parseQuery(parseUrl(request)!.query as string | null ?? ''));
    const listRequest = { pageSize: query.limit, pageToken: query.cursor ?? '', status: toWireStatus(query.status) };
    const bytes = await tracedCall(tracer, context.span, 'ListPets', { requestId: context.requestId }, (metadata) =>
      petClient.raw.listPets(listRequest, metadata, cancellable(context)),
    );
    const { body, nextPageToken } = listPetsResponseToJson(bytes);
    if (nextPageToken !== '') response.setHeader('Link', nextLink(query, nextPageToken));
    sendJson(response, 200, body);
  };

  const createPet = async (request: IncomingMessage, response: ServerResponse, context: RequestContext): Promise<void> => {
    const body = await readJsonBody(request);
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw NOT_AN_OBJECT;
    // Every invalid field at once: the body's, then the Idempotency-Key header's.
    const problems = validateNewPet(body) ? [] : describeErrors(validateNewPet.errors, 'body');
    const idempotencyKey = idempotencyKeyOf(request, problems);
    if (problems.length > 0) throw ApiError.invalidFields(problems);
    const pet = body as NewPetBody;
    // The key is scoped to the caller: the API key's id.
    const values =
      idempotencyKey === undefined
        ? { requestId: context.requestId }
        : { requestId: context.requestId, idempotencyKey, callerId: context.key!.id };
    const newPet = { name: pet.name, categoryId: pet.categoryId.toString(), status: toWireStatus(pet.status) };
    const created = await tracedCall(tracer, context.span, 'CreatePet', values, (metadata) =>
      petClient.raw.createPet(newPet, metadata, cancellable(context)),
    );
    const answer = petResponseToJson(created.bytes);
    response.setHeader('Location', `/v1/pets/${answer.id}`);
    if (answer.etag !== '') response.setHeader('ETag', answer.etag);
    if (created.replayed) response.setHeader('Idempotent-Replayed', 'true');
    sendJson(response, 201, answer.body);
  };

  const getPet = async (request: IncomingMessage, response: ServerResponse, context: RequestContext, petId: string): Promise<void> => {
    markDeprecated(response, now());
    const problems = petIdProblems(petId);
    const ifMatch = conditionHeader(request, 'if-match', 'If-Match', problems);
    const ifNoneMatch = conditionHeader(request, 'if-none-match', 'If-None-Match', problems);
    if (problems.length > 0) throw ApiError.invalidFields(problems);
    const bytes = await tracedCall(tracer, context.span, 'GetPet', { requestId: context.requestId }, (metadata) =>
      petClient.raw.getPet({ id: petId }, metadata, cancellable(context)),
    );
    const answer = petResponseToJson(bytes);
    if (answer.etag !== '') response.setHeader('ETag', answer.etag);
    // RFC 9110 section 13.2.2: If-Match first (strong comparison), then If-None-Match (weak).
    if (ifMatch !== undefined && !strongMatch(ifMatch, answer.etag)) throw preconditionFailed(answer.etag);
    if (ifNoneMatch !== undefined && weaklyMatches(ifNoneMatch, answer.etag)) {
      response.statusCode = 304;
      response.end();
      return;
    }
    sendJson(response, 200, answer.body);
  };

  const updatePet = async (request: IncomingMessage, response: ServerResponse, context: RequestContext, petId: string): Promise<void> => {
    const body = await readJsonBody(request, MERGE_PATCH);
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw NOT_AN_OBJECT;
    // Every invalid field at once: the path's, the body's, then the headers'.
    const problems = petIdProblems(petId);
    problems.push(...patchProblems(body as Record<string, unknown>));
    const idempotencyKey = idempotencyKeyOf(request, problems);
    const ifMatch = conditionHeader(request, 'if-match', 'If-Match', problems);
    if (request.headers['if-none-match'] !== undefined) problems.push(NO_IF_NONE_MATCH.message);
    if (problems.length > 0) throw ApiError.invalidFields(problems);
    const patch = body as PetPatchBody;
    const fields = PATCH_FIELDS.filter((field) => patch[field] !== undefined);
    const change = {
      pet: {
        id: petId,
        name: patch.name ?? '',
        categoryId: patch.categoryId?.toString() ?? '0',
        status: toWireStatus(patch.status),
        etag: '',
      },
      updateMask: fields.map((field) => (field === 'categoryId' ? 'category_id' : field)),
      etag: ifMatch ?? '',
    };
    const values =
      idempotencyKey === undefined
        ? { requestId: context.requestId }
        : { requestId: context.requestId, idempotencyKey, callerId: context.key!.id };
    const updated = await tracedCall(tracer, context.span, 'UpdatePet', values, (metadata) =>
      petClient.raw.updatePet(change, metadata, cancellable(context)),
    );
    const answer = petResponseToJson(updated.bytes);
    if (answer.etag !== '') response.setHeader('ETag', answer.etag);
    if (updated.replayed) response.setHeader('Idempotent-Replayed', 'true');
    sendJson(response, 200, answer.body);
  };

  const deletePet = async (request: IncomingMessage, response: ServerResponse, context: RequestContext, petId: string): Promise<void> => {
    const problems = petIdProblems(petId);
    const ifMatch = conditionHeader(request, 'if-match', 'If-Match', problems);
    if (request.headers['if-none-match'] !== undefined) problems.push(NO_IF_NONE_MATCH.message);
    if (problems.length > 0) throw ApiError.invalidFields(problems);
    await tracedCall(tracer, context.span, 'DeletePet', { requestId: context.requestId }, (metadata) =>
      petClient.deletePet({ id: petId, etag: ifMatch ?? '' }, metadata, cancellable(context)),
    );
    response.statusCode = 204;
    response.end();
  };

  const serve: ServedRoutes['serve'] = (request, response, context, path) => {
    const method = request.method;
    let served: Promise<void>;
    if (LIST_PATH.test(path)) {
      context.route = LIST_ROUTE;
      if (method === 'GET' || method === 'HEAD') served = listPets(request, response, context);
      else if (method === 'POST') served = createPet(request, response, context);
      else served = Promise.reject(LIST_METHODS);
    } else {
      const match = PET_PATH.exec(path);
      if (match === null) return false;
      context.route = PET_ROUTE;
      // Decoded before anything else, as express's router does while matching.
      const petId = decodeParameter(match[1]!);
      if (petId === undefined) served = Promise.reject(UNDECODABLE_PET_ID);
      else if (method === 'GET' || method === 'HEAD') served = getPet(request, response, context, petId);
      else if (method === 'PATCH') served = updatePet(request, response, context, petId);
      else if (method === 'DELETE') served = deletePet(request, response, context, petId);
      else served = Promise.reject(PET_METHODS);
    }
    served.catch((error: unknown) => fail(request, response, context, error));
    return true;
  };
  return { serve, routeOf };
}

/** What is wrong with `petId`, as a 400 names it; empty when it is a positive int64. */
function petIdProblems(petId: string): string[] {
  if (isPositiveInt64(petId)) return [];
  return [(LEADING_ZERO.test(petId) ? PET_ID_LEADING_ZERO : NOT_A_PET_ID).message];
}

/**
 * The request's `Idempotency-Key`, or undefined when it has none; a bad one adds its problem.
 * Node joins repeated fields with ", ", which the pattern would refuse as a bad value.
 */
function idempotencyKeyOf(request: IncomingMessage, problems: string[]): string | undefined {
  const key = request.headers['idempotency-key'];
  if (key === undefined) return undefined;
  if (validateIdempotencyKey(key)) return key as string;
  problems.push((fieldCount(request.rawHeaders, 'idempotency-key') > 1 ? TWO_IDEMPOTENCY_KEYS : BAD_IDEMPOTENCY_KEY).message);
  return undefined;
}

/**
 * An `If-Match` or `If-None-Match` field (`*`, or a list of entity tags; Node joins repeated
 * fields into one list, as RFC 9110 section 5.3 reads them), or undefined when absent; a malformed
 * one adds its problem.
 */
function conditionHeader(request: IncomingMessage, name: 'if-match' | 'if-none-match', label: string, problems: string[]): string | undefined {
  const value = request.headers[name];
  if (value === undefined) return undefined;
  if (parseEtagCondition(value) !== undefined) return value.trim();
  problems.push(`${label}: ${ETAG_CONDITION_PROBLEM}`);
  return undefined;
}

/** Whether `condition` (a valid If-Match) holds for a pet whose etag is `etag`: strong comparison. */
function strongMatch(condition: string, etag: string): boolean {
  const parsed = parseEtagCondition(condition)!;
  if (parsed.any) return true;
  const version = versionOfEtag(etag);
  return version !== undefined && parsed.versions.includes(version);
}

function preconditionFailed(etag: string): ApiError {
  return new ApiError(412, 'precondition_failed', `If-Match: does not match the pet's current ETag, ${etag}`, { ETag: etag });
}

/**
 * What is wrong with a merge patch of a pet: a `null` (which would remove a field every pet has)
 * named as such, the rest as the PetPatch schema says (the read-only `id` named as read-only), in
 * the schema's order; an empty patch is one problem.
 */
function patchProblems(body: Record<string, unknown>): string[] {
  const keys = Object.keys(body);
  if (keys.length === 0) return [EMPTY_PATCH.message];
  const problems = new Map<string, string>();
  const rest: Record<string, unknown> = {};
  for (const key of keys) {
    if (body[key] === null && (PATCH_FIELDS as readonly string[]).includes(key)) problems.set(key, `${key}: cannot be removed: a pet always has one`);
    else rest[key] = body[key];
  }
  if (Object.keys(rest).length > 0 && !validatePetPatch(rest)) {
    for (const problem of describeErrors(validatePetPatch.errors, 'body')) {
      const field = problem.slice(0, problem.indexOf(': '));
      problems.set(field, field === 'id' ? 'id: is read-only: the path names the pet' : problem);
    }
  }
  const named = [...PATCH_FIELDS].flatMap((field) => problems.get(field) ?? []);
  return [...named, ...[...problems].filter(([field]) => !(PATCH_FIELDS as readonly string[]).includes(field)).map(([, problem]) => problem)];
}

/**
 * The options of a pet service call made for the request: cancelled when its client goes away
 * before the answer (the request observer aborts `context.cancel`), so that the pet service stops
 * work nobody waits for.
 */
function cancellable(context: RequestContext): { signal: AbortSignal } {
  const controller = new AbortController();
  context.cancel = controller;
  return { signal: controller.signal };
}

function decodeParameter(encoded: string): string | undefined {
  try {
    return decodeURIComponent(encoded);
  } catch {
    return undefined;
  }
}

/** The list's query parameters, or a 400 naming every invalid one, in the parameters' order. */
function readListQuery(query: Record<string, string | string[] | undefined>): ListQuery {
  const input: Record<string, unknown> = {};
  const problems = new Map<string, string>();
  for (const name of LIST_PARAMETERS) {
    const value = query[name];
    if (value === undefined) continue;
    if (typeof value !== 'string') problems.set(name, `${name}: must be given once`);
    // Plain decimal, as for petId: `05` is refused for its leading zero, other text by the schema.
    else if (name === 'limit' && LEADING_ZERO.test(value)) problems.set(name, LIMIT_LEADING_ZERO.message);
    else input[name] = name === 'limit' && /^(?:0|-?[1-9][0-9]*)$/.test(value) ? Number(value) : value;
  }
  if (!validateListQuery(input)) {
    for (const problem of describeErrors(validateListQuery.errors, 'query')) problems.set(problem.slice(0, problem.indexOf(': ')), problem);
  }
  if (problems.size === 0) return input as unknown as ListQuery;
  const inOrder = [...LIST_PARAMETERS, 'query'].flatMap((field) => problems.get(field) ?? []);
  throw ApiError.invalidFields(inOrder);
}

function nextLink(query: ListQuery, cursor: string): string {
  const status = query.status === undefined ? '' : `&status=${query.status}`;
  return `</v1/pets?limit=${query.limit}${status}&cursor=${encodeURIComponent(cursor)}>; rel="next"`;
}
