/**
 * The JSON Schemas of the public contract. The gateway's request validators are compiled from
 * them (`http/json-schema.ts`) and the OpenAPI document publishes them as its components, so what
 * is documented and what is enforced cannot drift.
 */
import {
  DEFAULT_PAGE_SIZE,
  ETAG_CONDITION_PATTERN,
  IDEMPOTENCY_KEY_PATTERN,
  INT64_MAX,
  MAX_ETAG_CONDITION_LENGTH,
  MAX_PAGE_SIZE,
  NAME_MAX_CHARACTERS,
  NAME_MIN_CHARACTERS,
  NAME_PATTERN,
  PAGE_TOKEN_PATTERN,
} from '@petstore/proto';
import { ERROR_CODE_TABLE, ERROR_CODES, type ErrorCode } from '../api-error';
import { SUNSET_HTTP_DATE } from '../deprecation';

/** A pet's statuses as the API spells them. */
export const PET_STATUSES = ['available', 'pending', 'sold'] as const;

/** A positive int64 schema with `description`. */
export const int64 = (description: string) => ({ type: 'integer', format: 'int64', minimum: 1, maximum: INT64_MAX, description });

const EXAMPLE_PETS = [
  { id: 1, name: 'Rex', categoryId: 3, status: 'available' },
  { id: 2, name: 'Tom', categoryId: 12, status: 'sold' },
];

/** A representative message for each code, shown in the document's examples. */
export const EXAMPLE_MESSAGES: Readonly<Record<ErrorCode, string>> = {
  invalid_request: 'categoryId: must be a positive int64',
  unauthorized: 'missing bearer API key',
  forbidden: 'permission denied',
  not_found: 'pet 42 not found',
  method_not_allowed: 'method not allowed; allowed: GET, HEAD, POST',
  conflict: 'Idempotency-Key: already used with a different request',
  invalid_transition: 'status: cannot change from sold to available; sold is final',
  precondition_failed: 'If-Match: does not match the pet\'s current ETag, "3"',
  gone: `this operation was removed at ${SUNSET_HTTP_DATE}; use GET /v1/pets?status=`,
  payload_too_large: 'body: larger than 64 KiB',
  unsupported_media_type: 'body: Content-Type must be application/json',
  rate_limited: 'rate limit exceeded: 60 requests per minute',
  api_key_banned: 'API key temporarily banned for repeated requests while rate limited',
  internal: 'internal error',
  service_unavailable: 'pet service unavailable',
  bad_gateway: 'the upstream service failed to answer',
  gateway_timeout: 'pet service did not answer in time',
};
/** An example Error body for `code`. */
export const exampleError = (code: ErrorCode) => ({ code, message: EXAMPLE_MESSAGES[code], status: ERROR_CODE_TABLE[code].statuses[0] });

const NAME = {
  type: 'string',
  minLength: NAME_MIN_CHARACTERS,
  maxLength: NAME_MAX_CHARACTERS,
  pattern: NAME_PATTERN.source,
  description: `${NAME_MIN_CHARACTERS} to ${NAME_MAX_CHARACTERS} characters (code points), none of them a control character (U+0000 to U+001F, U+007F to U+009F).`,
} as const;

export const schemas = {
  PetStatus: {
    type: 'string',
    enum: [...PET_STATUSES],
    description:
      'Availability of a pet. It changes only as the transition table allows: available to pending (reserved), pending to available ' +
      '(released), pending or available to sold; sold is final.',
  },
  NewPet: {
    type: 'object',
    required: ['name', 'categoryId'],
    additionalProperties: false,
    properties: {
      name: NAME,
      categoryId: int64(
        'Positive int64, emitted as a plain JSON integer without rounding. Accepted as any JSON number whose value is an integer in range, exactly: `100`, `100.0` and `1E2` are all 100.',
      ),
      status: { $ref: '#/components/schemas/PetStatus', default: 'available' },
    },
    examples: [{ name: 'Rex', categoryId: 3 }],
  },
  PetPatch: {
    type: 'object',
    description:
      'A JSON Merge Patch (RFC 7396) of a pet: the fields to change, each with the rules of NewPet; those left out keep their values. ' +
      'At least one; `id` and unknown fields are refused by name, and so is `null` (it would remove a field every pet has). ' +
      'A `status` must be a change the transition table allows from the pet\'s current status.',
    minProperties: 1,
    additionalProperties: false,
    properties: {
      name: NAME,
      categoryId: int64('Positive int64, accepted as in NewPet.'),
      status: { $ref: '#/components/schemas/PetStatus' },
    },
    examples: [{ status: 'sold' }, { name: 'Rex II', categoryId: 4 }],
  },
  Pet: {
    type: 'object',
    required: ['id', 'name', 'categoryId', 'status'],
    additionalProperties: false,
    properties: {
      id: int64('Assigned by the service: unique and increasing.'),
      name: { type: 'string', minLength: NAME_MIN_CHARACTERS, maxLength: NAME_MAX_CHARACTERS },
      categoryId: int64('Positive int64.'),
      status: { $ref: '#/components/schemas/PetStatus' },
    },
    examples: [EXAMPLE_PETS[0]],
  },
  Pets: { type: 'array', items: { $ref: '#/components/schemas/Pet' }, examples: [EXAMPLE_PETS] },
  Error: {
    type: 'object',
    description: 'The body of every error response, whatever its status. The codes are listed under Errors at the top.',
    required: ['code', 'message', 'status'],
    additionalProperties: false,
    properties: {
      code: { type: 'string', enum: [...ERROR_CODES], description: 'Machine-readable; a closed set.' },
      message: { type: 'string', description: 'Human-readable; names the offending field for 400s.' },
      status: { type: 'integer', minimum: 400, maximum: 599, description: 'The HTTP status code.' },
    },
    examples: [exampleError('invalid_request')],
  },
  EtagCondition: {
    type: 'string',
    maxLength: MAX_ETAG_CONDITION_LENGTH,
    pattern: ETAG_CONDITION_PATTERN.source,
    description:
      '`*`, or one or more entity tags as the `ETag` header gives them, quotes included, separated by commas (RFC 9110 section 13.1); empty list elements are ignored (section 5.6.1.2).',
  },
  IdempotencyKey: {
    type: 'string',
    minLength: 1,
    maxLength: 255,
    pattern: IDEMPOTENCY_KEY_PATTERN.source,
    description: '1 to 255 visible ASCII characters, chosen by the client (a UUID is typical).',
  },
} as const;

/**
 * listPets' query parameters as one object, the schema the gateway validates a query with. Not a
 * component of the document: the operation lists the parameters one by one, each with its schema
 * from here, so the document and the validator share them.
 */
export const LIST_QUERY = {
  type: 'object',
  additionalProperties: true,
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE },
    status: { $ref: '#/components/schemas/PetStatus' },
    cursor: { type: 'string', pattern: PAGE_TOKEN_PATTERN.source },
  },
} as const;
