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
              'Idempotent-Replayed': {
                schema: { type: 'string', enum: ['true'] },
                description: 'Present when the response replays an earlier create with the same Idempotency-Key.',
              },
            },
            ...jsonBody('Pet'),
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
        description: `Deprecated; removed at ${SUNSET_HTTP_DATE}. Use listPets with a status filter.`,
        parameters: [{ name: 'petId', in: 'path', required: true, schema: int64('Positive int64 in decimal.') }],
        responses: deprecatedResponses(
          {
            '200': { description: 'The pet.', ...jsonBody('Pet') },
            '400': error('`petId` is not a positive int64, or is not validly percent-encoded, or two Authorization fields.', ['invalid_request'], {
              invalid_request: 'petId: must be a positive int64',
            }),
            '404': error('No pet with this id.', ['not_found']),
            '410': error('The operation has reached its sunset.', ['gone']),
            ...commonErrors,
          },
          ['200', '404', '410'],
        ),
      },
    },
  }),
  components: {
    schemas,
    securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key.' } },
  },
};
