import { protobufPackage } from './gen/petstore/v1/pet_service';

/**
 * Bounds and patterns of the petstore.v1 contract that the .proto comments state but protobuf
 * cannot enforce. The gateway's OpenAPI document and validators and the pet service's validation
 * both import them from here, so an HTTP client and an internal gRPC caller meet the same rules.
 */

/** Fully-qualified name of the service: health checks, reflection and service config use it. */
export const PET_SERVICE_NAME = `${protobufPackage}.PetService`;

/** Largest int64; ids and category ids are positive int64s, never rounded. */
export const INT64_MAX = 9223372036854775807n;
/** A positive int64 in decimal, before the {@link INT64_MAX} check: no sign, no leading zero. */
export const POSITIVE_INT64_PATTERN = /^[1-9][0-9]{0,18}$/;

/** Whether `text` is a positive int64 written in plain decimal. */
export function isPositiveInt64(text: string): boolean {
  return POSITIVE_INT64_PATTERN.test(text) && BigInt(text) <= INT64_MAX;
}

/** A pet's name: 1 to 100 characters, counted as code points (as JSON Schema counts them). */
export const NAME_MIN_CHARACTERS = 1;
export const NAME_MAX_CHARACTERS = 100;
/** What both services say of a name outside those bounds. */
export const NAME_LENGTH_PROBLEM = `must be ${NAME_MIN_CHARACTERS} to ${NAME_MAX_CHARACTERS} characters`;
/**
 * A pet's name has no control characters (Unicode category Cc: U+0000 to U+001F, U+007F to
 * U+009F): a NUL or an escape sequence in a name would reach every terminal, log and client that
 * shows it. Invalid UTF-8 is refused before this applies, over HTTP and gRPC alike. Written as
 * an explicit class rather than `\P{Cc}`, which is the same set, because the OpenAPI document
 * carries this pattern and most generators and fuzzers outside JavaScript know no Unicode
 * property escapes.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
export const NAME_PATTERN = /^[^\x00-\x1F\x7F-\x9F]*$/u;
/** What both services say of a name that does not match {@link NAME_PATTERN}. */
export const NAME_PATTERN_PROBLEM = 'must not contain control characters (U+0000 to U+001F, U+007F to U+009F)';

/**
 * The shape of a page token (the gateway's `cursor`): `base64url(payload + 12-byte MAC)`, unpadded,
 * the payload `v1.<status>.<last id>` of 8 to 32 bytes, so 20 to 44 bytes, 27 to 59 characters.
 * Only the pet service can tell a token it issued from one of the same shape.
 */
export const PAGE_TOKEN_PATTERN = /^[A-Za-z0-9_-]{27,59}$/;
/** What both services say of a page token that is not one the pet service issued. */
export const PAGE_TOKEN_PROBLEM = 'is malformed';

/** ListPets page size: `page_size` 0 means the default; the gateway's `limit` has the same bounds. */
export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

/**
 * A request id worth keeping and logging: at most 128 safe characters. Anything else is replaced
 * by the gateway and not logged by the pet service.
 */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9._~:+/=-]{1,128}$/;

/** An idempotency key, and a caller id: 1 to 255 visible ASCII characters. */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
/** What both services say of an idempotency key or caller id that does not match {@link IDEMPOTENCY_KEY_PATTERN}. */
export const IDEMPOTENCY_KEY_PROBLEM = 'must be 1 to 255 visible ASCII characters';
/** What both services say of a header or metadata entry sent more than once where one is allowed. */
export const ONE_VALUE_PROBLEM = 'must be one value';
