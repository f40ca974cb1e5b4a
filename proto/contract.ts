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

/** A pet's statuses as the HTTP API and the stores spell them (PET_STATUS_AVAILABLE is `available`). */
export type PetStatusName = 'available' | 'pending' | 'sold';

/**
 * The changes of status a pet may make, the one table both services apply (docs/decisions.md):
 * reserved (available to pending), released (pending to available), sold from either; `sold` is
 * final. Naming the status a pet already has is no transition and is refused like any other: a
 * second clerk selling a sold pet, or reserving a reserved one, must hear that it was not them.
 */
export const STATUS_TRANSITIONS: { readonly [From in PetStatusName]: readonly PetStatusName[] } = {
  available: ['pending', 'sold'],
  pending: ['available', 'sold'],
  sold: [],
};

/** The statuses from which a pet may change to `to`: the filter of a conditional write. */
export function statusesLeadingTo(to: PetStatusName): PetStatusName[] {
  return (Object.keys(STATUS_TRANSITIONS) as PetStatusName[]).filter((from) => STATUS_TRANSITIONS[from].includes(to));
}

/** What both services say of a change of status the table refuses, naming both statuses. */
export function transitionProblem(from: PetStatusName, to: PetStatusName): string {
  const allowed = STATUS_TRANSITIONS[from];
  return `cannot change from ${from} to ${to}; ${allowed.length === 0 ? `${from} is final` : `${from} can change to ${allowed.join(' or ')}`}`;
}

/**
 * A pet's entity tag (RFC 9110 section 8.8.3), strong, quotes included: its stored version, which
 * every change raises by one, so the tag changes with every change and only then. Pets stored
 * before versions existed are version 0. Opaque to clients: they compare and send it back.
 */
export function etagOf(version: number): string {
  return `"${version}"`;
}

/** The version a strong entity tag of {@link etagOf}'s form names; undefined for any other tag (which matches no pet). */
export function versionOfEtag(etag: string): number | undefined {
  const match = /^"(0|[1-9][0-9]{0,14})"$/.exec(etag);
  return match === null ? undefined : Number(match[1]);
}

/**
 * One entity tag as RFC 9110 section 8.8.3 writes it: optional `W/`, then opaque text in double
 * quotes (visible ASCII and obs-text but `"`; obs-text is not accepted here, as no tag of ours has it).
 */
const ENTITY_TAG = String.raw`(?:W\/)?"[\x21\x23-\x7e]*"`;
/**
 * An `If-Match` or `If-None-Match` value: `*`, or a comma-separated list of entity tags, at least
 * one. Empty list elements (`"1", , "2",`) are accepted and ignored, as RFC 9110 section 5.6.1.2
 * requires of a recipient: they come from senders and proxies that join field lines, as Node does
 * with repeated fields. A value with no tag at all stays refused: as a condition it could only
 * fail, and over gRPC an empty etag means no condition.
 */
export const ETAG_CONDITION_PATTERN = new RegExp(String.raw`^(?:\*|(?:,[ \t]*)*${ENTITY_TAG}(?:[ \t]*,(?:[ \t]*${ENTITY_TAG})?)*)$`);
const EACH_TAG = /(?:W\/)?"[^"]*"/g;
/** What both services say of a condition that is not `*` or a list of entity tags. */
export const ETAG_CONDITION_PROBLEM = 'must be * or a comma-separated list of quoted entity tags';
/** The longest condition accepted: far more tags than any client sends. */
export const MAX_ETAG_CONDITION_LENGTH = 1024;

/**
 * A parsed `If-Match` (or UpdatePetRequest.etag): `any` for `*`, which any existing pet matches, or
 * the versions its strong tags of {@link etagOf}'s form name (weak tags never match under the strong
 * comparison RFC 9110 section 13.1.1 requires; tags of another form match no pet). Undefined for a
 * value that is no condition.
 */
export type EtagCondition = { readonly any: true } | { readonly any: false; readonly versions: readonly number[] };

export function parseEtagCondition(value: string): EtagCondition | undefined {
  const trimmed = value.trim();
  if (trimmed.length > MAX_ETAG_CONDITION_LENGTH || !ETAG_CONDITION_PATTERN.test(trimmed)) return undefined;
  if (trimmed === '*') return { any: true };
  const versions = new Set<number>();
  for (const tag of trimmed.match(EACH_TAG)!) {
    const version = versionOfEtag(tag);
    if (version !== undefined) versions.add(version);
  }
  return { any: false, versions: [...versions] };
}

/** Whether `etag` (strong, ours) matches `condition` under weak comparison (If-None-Match, RFC 9110 section 13.1.2). */
export function weaklyMatches(condition: string, etag: string): boolean {
  const trimmed = condition.trim();
  if (trimmed === '*') return true;
  return (trimmed.match(EACH_TAG) ?? []).some((tag) => (tag.startsWith('W/') ? tag.slice(2) : tag) === etag);
}
