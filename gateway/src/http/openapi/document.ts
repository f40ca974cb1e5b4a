/**
 * The OpenAPI 3.1 document for the public contract, served at `GET /v1/openapi.json`. Its schemas
 * are the ones the request validators compile, and the integration tests validate every response
 * against it, so the document and the behaviour cannot drift.
 */
import { SUNSET_HTTP_DATE } from '../deprecation';
import { apiDescription } from './introduction';
import { commonErrors, deprecatedResponses, error, withRateLimitHeaders } from './responses';
import { int64, LIST_QUERY, schemas } from './schemas';

const jsonBody = (ref: string) => ({ content: { 'application/json': { schema: { $ref: `#/components/schemas/${ref}` } } } });
const PET_ID = { name: 'petId', in: 'path', required: true, schema: int64('Positive int64 in decimal.') };
const ETAG = {
  ETag: {
    schema: { type: 'string' },
    required: true,
    description: "The pet's strong entity tag (RFC 9110 section 8.8.3), quotes included; it changes with every change of the pet. Send it back in `If-Match`.",
    example: '"3"',
  },
};
const condition = (name: 'If-Match' | 'If-None-Match', description: string) => ({
  name,
  in: 'header',
  required: false,
  description,
  schema: { $ref: '#/components/schemas/EtagCondition' },
});
const IF_MATCH = condition(
  'If-Match',
  'Makes the request conditional: it applies only if the pet\'s current ETag is one of these (strong comparison); otherwise 412 with the current `ETag`. ' +
    '`*` matches any existing pet. Without it the request applies to the pet as it is (last write wins): send it whenever you read the pet before changing it.',
);
/** Where a created pet's id is, for the operations that take it: OpenAPI links, which Schemathesis's stateful phase follows. */
const PET_LINKS = Object.fromEntries(
  (['getPet', 'updatePet', 'deletePet'] as const).map((operationId) => [
    operationId,
    { operationId, parameters: { petId: '$response.body#/id' }, description: `The pet just answered, by its id, for ${operationId}.` },
  ]),
);
const PRECONDITION_FAILED = {
  ...error('`If-Match` names no current ETag of the pet: it changed since you read it. `ETag` is the current one.', ['precondition_failed']),
  headers: { ETag: { ...ETAG.ETag, description: "The pet's current entity tag." } },
};
/** A change's or delete's 503: the shared causes, and the pet changing under it on every attempt. */
const CHANGE_UNAVAILABLE = {
  ...commonErrors['503'],
  ...error(
    'The pet service (or its store) is unavailable or did not answer in time, or it is over capacity and shed the request, ' +
      'or the pet kept changing while the pet service tried this request (no condition of yours failed). Retry after `Retry-After`.',
    ['service_unavailable'],
  ),
};
const PET_ID_400 = 'petId: must be a positive int64';
const queryParameter = (name: keyof typeof LIST_QUERY.properties, description: string) => ({
  name,
  in: 'query',
  required: false,
  description,
  schema: LIST_QUERY.properties[name],
});

export const openApiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'Pet store',
    version: '1.0.0',
    description: apiDescription(),
    contact: { name: 'Pet store platform team', url: 'https://petstore.example.com/support', email: 'platform@petstore.example.com' },
    // The service is not open source: its terms are the provider's, not a published licence.
    license: { name: 'Proprietary', url: 'https://petstore.example.com/terms' },
  },
  tags: [{ name: 'pets', description: 'The pets in the store.' }],
  servers: [{ url: '/v1' }],
  security: [{ bearerAuth: [] }],
  paths: withRateLimitHeaders({
    '/pets': {
      get: {
        operationId: 'listPets',
        tags: ['pets'],
        summary: 'List pets in ascending id order.',
        description:
          'A page of pets, oldest first, optionally only those with one status. Pages are at most `limit` long; ' +
          'while more exist, `Link: <…>; rel="next"` gives the next page, whose `cursor` is opaque and bound to the `status` filter.',
        parameters: [
          queryParameter('limit', 'Page size, 1 to 100.'),
          queryParameter('status', 'Only pets with this status.'),
          queryParameter('cursor', 'Opaque; taken from the `Link: rel="next"` header of the previous page.'),
        ],
        responses: {
          '200': {
            description: 'A page of pets. When more exist, `Link` carries the next page with rel="next".',
            headers: {
              Link: {
                schema: { type: 'string' },
                description: 'The next page (RFC 8288), with the same `limit` and `status`; absent on the last page.',
                example: '</v1/pets?limit=2&status=available&cursor=djEuYXZhaWxhYmxlLjKapSb59djMg2pz9O0>; rel="next"',
              },
            },
            ...jsonBody('Pets'),
          },
          '400': error('Bad `limit`, `status` or `cursor`, or two Authorization fields.', ['invalid_request'], {
            invalid_request: 'limit: must be <= 100',
          }),
          ...commonErrors,
        },
      },
      post: {
        operationId: 'createPet',
        tags: ['pets'],
        summary: 'Add a pet.',
        description:
          'Creates a pet and answers 201 with it, its int64 `id` and `Location`. `status` defaults to `available`. ' +
          'With an `Idempotency-Key`, a retry of the same body returns the first result instead of creating another pet.',
        parameters: [
          {
            name: 'Idempotency-Key',
            in: 'header',
            required: false,
            description:
              'Makes the create safe to retry: for 24 hours, a retry with the same key and body returns the first ' +
              "result (same id, 201) and creates nothing. Keys are scoped to the API key.",
            schema: { $ref: '#/components/schemas/IdempotencyKey' },
          },
        ],
        requestBody: { required: true, ...jsonBody('NewPet') },
        responses: {
          '201': {
            description: 'Created, or the first result again for a retried Idempotency-Key.',
            headers: {
              Location: { schema: { type: 'string' }, required: true, description: '/v1/pets/{id}' },
              ...ETAG,
              'Idempotent-Replayed': {
                schema: { type: 'string', enum: ['true'] },
                description: 'Present when the response replays an earlier create with the same Idempotency-Key.',
              },
            },
            ...jsonBody('Pet'),
            links: PET_LINKS,
          },
          '400': error(
            'Body missing, not valid UTF-8, escaping an unpaired surrogate, nested more than 64 deep, not JSON or not a JSON object; a field missing or invalid; a bad Idempotency-Key; or two Authorization fields.',
            ['invalid_request'],
          ),
          '409': error('The Idempotency-Key was already used with a different body.', ['conflict']),
          '413': error('Body over 64 KiB.', ['payload_too_large']),
          '415': error('Body is not application/json, or its charset is not utf-8.', ['unsupported_media_type']),
          ...commonErrors,
        },
      },
    },
    '/pets/{petId}': {
      get: {
        operationId: 'getPet',
        tags: ['pets'],
        summary: 'Fetch one pet.',
        deprecated: true,
        description:
          `Deprecated; removed at ${SUNSET_HTTP_DATE}. Use listPets with a status filter. Only GET (and HEAD) on this path is deprecated: ` +
          'PATCH and DELETE are not. Until the sunset it is also where a pet\'s `ETag` is read, for a conditional change; ' +
          '`If-None-Match` answers 304 while the pet is unchanged.',
        parameters: [
          PET_ID,
          condition('If-None-Match', 'Answers 304 Not Modified (no body) when the pet\'s ETag is one of these (weak comparison), or for `*`.'),
          condition('If-Match', 'Answers 412 unless the pet\'s ETag is one of these (strong comparison), or for `*`.'),
        ],
        responses: deprecatedResponses(
          {
            '200': { description: 'The pet.', headers: ETAG, ...jsonBody('Pet') },
            '304': { description: 'The pet is unchanged since the ETag the client holds (If-None-Match); no body.', headers: ETAG },
            '400': error('`petId` is not a positive int64, or is not validly percent-encoded, or a malformed If-Match or If-None-Match, or two Authorization fields.', ['invalid_request'], {
              invalid_request: PET_ID_400,
            }),
            '404': error('No pet with this id.', ['not_found']),
            '410': error('The operation has reached its sunset.', ['gone']),
            '412': PRECONDITION_FAILED,
            ...commonErrors,
          },
          ['200', '304', '404', '410', '412'],
        ),
      },
      patch: {
        operationId: 'updatePet',
        tags: ['pets'],
        summary: 'Change a pet: rename it, recategorise it, reserve, release or sell it.',
        description:
          'A JSON Merge Patch (RFC 7396) of `name`, `categoryId` and `status`: the fields sent change, the others keep their values; answers 200 with the pet and its new `ETag`. ' +
          'A change of `status` must be one the transition table allows: available to pending, pending to available, pending or available to sold; ' +
          'sold is final, and naming the current status is no transition (409 `invalid_transition`). ' +
          'A patch that changes nothing answers 200 with the pet and its ETag unchanged. With `If-Match` the change applies only to the pet you read (412 otherwise). ' +
          'With an `Idempotency-Key`, a retry answers the first change again. Not deprecated.',
        parameters: [
          PET_ID,
          IF_MATCH,
          {
            name: 'Idempotency-Key',
            in: 'header',
            required: false,
            description:
              'Makes the change safe to retry: for 24 hours, a retry with the same key, pet and body answers the first change again (200, `Idempotent-Replayed: true`) ' +
              'and changes nothing. Keys are scoped to the API key and the pet; the same key with another body is 409 `conflict`. A refused change is not remembered.',
            schema: { $ref: '#/components/schemas/IdempotencyKey' },
          },
        ],
        requestBody: {
          required: true,
          content: {
            'application/merge-patch+json': { schema: { $ref: '#/components/schemas/PetPatch' } },
            'application/json': { schema: { $ref: '#/components/schemas/PetPatch' } },
          },
        },
        responses: {
          '200': {
            description: 'The pet after the change, or the first change again for a retried Idempotency-Key.',
            headers: {
              ...ETAG,
              'Idempotent-Replayed': {
                schema: { type: 'string', enum: ['true'] },
                description: 'Present when the response replays an earlier change with the same Idempotency-Key.',
              },
            },
            ...jsonBody('Pet'),
          },
          '400': error(
            'Body missing, not JSON, not an object or empty; a field invalid, `null`, read-only (`id`) or unknown; a bad `petId`, `If-Match`, ' +
              '`Idempotency-Key`; `If-None-Match` sent; or two Authorization fields.',
            ['invalid_request'],
            { invalid_request: 'status: must be one of available, pending, sold' },
          ),
          '404': error('No pet with this id.', ['not_found']),
          '409': error('The change of status is not one the transition table allows, or the Idempotency-Key was already used with another change.', [
            'invalid_transition',
            'conflict',
          ]),
          '412': PRECONDITION_FAILED,
          '413': error('Body over 64 KiB.', ['payload_too_large']),
          '415': {
            ...error('Body is not application/merge-patch+json or application/json, or its charset is not utf-8.', ['unsupported_media_type']),
            headers: { 'Accept-Patch': { schema: { type: 'string' }, description: 'The patch media types accepted (RFC 5789).', example: 'application/merge-patch+json, application/json' } },
          },
          ...commonErrors,
          '503': CHANGE_UNAVAILABLE,
        },
      },
      delete: {
        operationId: 'deletePet',
        tags: ['pets'],
        summary: 'Delete a pet.',
        description:
          'Answers 204; from then on the pet is 404 on every route, and a second DELETE is 404 too. With `If-Match` only the pet you read is deleted (412 otherwise). Not deprecated.',
        parameters: [PET_ID, IF_MATCH],
        responses: {
          '204': { description: 'Deleted.' },
          '400': error('A bad `petId` or `If-Match`, `If-None-Match` sent, or two Authorization fields.', ['invalid_request'], { invalid_request: PET_ID_400 }),
          '404': error('No pet with this id.', ['not_found']),
          '412': PRECONDITION_FAILED,
          ...commonErrors,
          '503': CHANGE_UNAVAILABLE,
        },
      },
    },
  }),
  components: {
    schemas,
    securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key.' } },
  },
};
