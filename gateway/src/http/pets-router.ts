import type { Metadata } from '@grpc/grpc-js';
import { callMetadata, isPositiveInt64 } from '@petstore/proto';
import { type ErrorRequestHandler, type Response, Router } from 'express';
import { ApiError } from './api-error';
import { deprecated } from './deprecation';
import { isUndecodableParameter } from './error-handler';
import { compileComponentSchema, describeFirstError } from './json-schema';
import { jsonBody } from './json-body';
import type { PetClient } from '../pet-service-client/pet-client';
import { petsToJson, petToJson, toWireStatus } from './pet-json';
import { callerOf, requestIdOf } from '../observability/request-logging';

export interface PetsRouterOptions {
  readonly petClient: PetClient;
  /** Milliseconds since the epoch; injected so tests can move time. */
  readonly now: () => number;
  /** False only in benchmarks that measure validation's cost; default true. */
  readonly validate?: boolean;
}

interface NewPetBody {
  name: string;
  categoryId: number | bigint;
  status: string;
}

interface ListQuery {
  limit: number;
  status?: string;
  cursor?: string;
}

const validateNewPet = compileComponentSchema('NewPet');
const validateIdempotencyKey = compileComponentSchema('IdempotencyKey');
const validateListQuery = compileComponentSchema('ListQuery');
const LIST_PARAMETERS = ['limit', 'status', 'cursor'] as const;

/**
 * `/v1/pets` and `/v1/pets/:petId`: JSON in, one gRPC call each, JSON out. Routes carry their
 * full path so that `request.route.path` is the template that logs and metrics report.
 */
export function createPetsRouter({ petClient, now, validate = true }: PetsRouterOptions): Router {
  const router = Router();

  router
    .route('/v1/pets')
    .get(async (request, response) => {
      const query = readListQuery(request.query, validate);
      const { pets, nextPageToken } = await petClient.listPets({
        pageSize: query.limit,
        pageToken: query.cursor ?? '',
        status: toWireStatus(query.status),
      }, requestMetadata(response));
      if (nextPageToken !== '') response.set('Link', nextLink(query, nextPageToken));
      sendJson(response, 200, petsToJson(pets));
    })
    .post(...jsonBody, async (request, response) => {
      const body: unknown = request.body;
      if (body === null || typeof body !== 'object' || Array.isArray(body)) {
        throw ApiError.invalid('body', 'must be a JSON object');
      }
      if (validate && !validateNewPet(body)) throw new ApiError(400, 'invalid_request', describeFirstError(validateNewPet.errors, 'body'));
      const pet = body as NewPetBody;
      const idempotencyKey = request.headers['idempotency-key'];
      if (idempotencyKey !== undefined && !validateIdempotencyKey(idempotencyKey)) {
        throw ApiError.invalid('Idempotency-Key', 'must be 1 to 255 visible ASCII characters');
      }
      // The key is scoped to the caller: the API key's id.
      const metadata = idempotencyKey === undefined
        ? requestMetadata(response)
        : callMetadata({ requestId: requestIdOf(response), idempotencyKey: idempotencyKey as string, callerId: callerOf(response.locals)!.id });
      const created = await petClient.createPet({
        name: pet.name,
        categoryId: pet.categoryId.toString(),
        status: toWireStatus(pet.status),
      }, metadata);
      response.set('Location', `/v1/pets/${created.pet!.id}`);
      if (created.replayed) response.set('Idempotent-Replayed', 'true');
      sendJson(response, 201, petToJson(created.pet!));
    })
    .all(methodNotAllowed('GET, HEAD, POST'));

  // A router of its own, so that its error handler hears only this route's errors.
  const petRouter = Router();
  petRouter
    .route('/v1/pets/:petId')
    .get(deprecated(now), async (request, response) => {
      const petId = String(request.params.petId);
      if (!isPositiveInt64(petId)) throw ApiError.invalid('petId', 'must be a positive int64');
      const { pet } = await petClient.getPet({ id: petId }, requestMetadata(response));
      sendJson(response, 200, petToJson(pet!));
    })
    .all(methodNotAllowed('GET, HEAD'));
  petRouter.use(namePetId);
  router.use(petRouter);

  return router;
}

/** The route's one parameter is the one the router could not percent-decode: say so. */
const namePetId: ErrorRequestHandler = (error, _request, _response, next) => {
  next(isUndecodableParameter(error) ? ApiError.invalid('petId', 'malformed percent-encoding') : error);
};

/** Carries the request id to the pet service, so both services log the same id. */
function requestMetadata(response: Response): Metadata {
  return callMetadata({ requestId: requestIdOf(response) });
}

/** Answers any method a route does not serve: 405 with `Allow`. */
export function methodNotAllowed(allow: string) {
  return (): never => {
    throw new ApiError(405, 'method_not_allowed', `method not allowed; allowed: ${allow}`, { Allow: allow });
  };
}

function readListQuery(query: Record<string, unknown>, validate: boolean): ListQuery {
  const input: Record<string, unknown> = {};
  for (const name of LIST_PARAMETERS) {
    const value = query[name];
    if (value === undefined) continue;
    if (typeof value !== 'string') throw ApiError.invalid(name, 'must be given once');
    input[name] = name === 'limit' && /^-?[0-9]+$/.test(value) ? Number(value) : value;
  }
  if (validate && !validateListQuery(input)) throw new ApiError(400, 'invalid_request', describeFirstError(validateListQuery.errors, 'query'));
  return input as unknown as ListQuery;
}

function nextLink(query: ListQuery, cursor: string): string {
  const status = query.status === undefined ? '' : `&status=${query.status}`;
  return `</v1/pets?limit=${query.limit}${status}&cursor=${encodeURIComponent(cursor)}>; rel="next"`;
}

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * What express's `status(...).type('application/json').send(json)` writes for a string body with
 * ETags off, without its MIME lookup and charset parsing on every response. A conditional request
 * still goes through express, which may answer it 304. Node leaves out the body of a HEAD
 * response itself.
 */
function sendJson(response: Response, status: number, json: string): void {
  const { headers } = response.req;
  if (headers['if-none-match'] !== undefined || headers['if-modified-since'] !== undefined) {
    response.status(status).type('application/json').send(json);
    return;
  }
  response.statusCode = status;
  response.setHeader('Content-Type', JSON_TYPE);
  response.setHeader('Content-Length', Buffer.byteLength(json));
  response.end(json);
}
