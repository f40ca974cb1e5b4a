import type { IncomingMessage } from 'node:http';
import type { Transform } from 'node:stream';
import zlib from 'node:zlib';
import { parse as parseContentType } from 'content-type';
import getRawBody from 'raw-body';
import { ApiError } from './api-error';
import { jsonTextProblem, parseJsonLosslessly } from './lossless-json';

/** Largest request body accepted, in bytes. */
export const MAX_BODY_BYTES = 64 * 1024;

const utf8 = new TextDecoder('utf-8', { fatal: true });
/** A body over {@link MAX_BODY_BYTES}, sent or decoded. */
export const TOO_LARGE = new ApiError(413, 'payload_too_large', 'body: larger than 64 KiB');
const UNSUPPORTED_CODING = new ApiError(415, 'unsupported_media_type', 'body: unsupported Content-Encoding');
const UNDECODABLE = ApiError.invalid('body', 'does not decode as its Content-Encoding says');
/** A body whose client left before sending all of it. */
export const ABORTED = new ApiError(400, 'invalid_request', 'body: request aborted');

/** A zlib decoder: `bytesWritten` counts the coded bytes it consumed. */
type Decoder = Transform & { readonly bytesWritten: number };

/** The Content-Encodings served, each with its decoder. */
const DECODERS: ReadonlyMap<string, () => Decoder> = new Map([
  ['gzip', () => zlib.createGunzip()],
  ['deflate', () => zlib.createInflate()],
  ['br', () => zlib.createBrotliDecompress()],
  ['zstd', () => zlib.createZstdDecompress()],
]);

/**
 * A body's bytes, as raw bytes rather than text (a text decoder would turn invalid UTF-8 into
 * U+FFFD unseen), with its Content-Encoding undone; any coding but those served is 415. raw-body
 * holds the limit and the declared length.
 */
function readBytes(request: IncomingMessage): Promise<Buffer> {
  const coding = (request.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (coding === 'identity') return getRawBody(request, { length: request.headers['content-length'], limit: MAX_BODY_BYTES });
  const decoder = DECODERS.get(coding)?.();
  if (decoder === undefined) return Promise.reject(UNSUPPORTED_CODING);
  return decode(request, decoder);
}

/**
 * A coded body, decoded. The limit holds on both sides: on the bytes sent, as it does on a declared
 * length, and on the bytes decoded. The body must end where its coded data ends: deflate, br and
 * zstd decoders stop there and would drop what follows unseen (gzip's alone refuses it), so a byte
 * the decoder did not consume makes the body undecodable. Whatever the outcome, the rest of the
 * request is read off, so that the connection can carry the answer and the next request.
 */
async function decode(request: IncomingMessage, decoder: Decoder): Promise<Buffer> {
  let sent = 0;
  const received = new Promise<void>((resolve, reject) => {
    request.on('data', (chunk: Buffer) => {
      sent += chunk.length;
      if (sent > MAX_BODY_BYTES) reject(TOO_LARGE);
    });
    request.on('end', resolve);
    request.on('error', () => reject(ABORTED));
    request.on('close', () => {
      if (!request.complete) reject(ABORTED);
    });
  });
  request.pipe(decoder);
  try {
    const [decoded] = await Promise.all([
      getRawBody(decoder, { limit: MAX_BODY_BYTES }).catch((error: unknown) => {
        throw (error as { type?: unknown }).type === 'entity.too.large' ? TOO_LARGE : UNDECODABLE;
      }),
      received,
    ]);
    if (decoder.bytesWritten !== sent) throw UNDECODABLE;
    return decoded;
  } finally {
    request.unpipe(decoder);
    decoder.destroy();
    request.resume();
  }
}
const MISSING = ApiError.invalid('body', 'is required: send a JSON object');
const NOT_JSON_TYPE = new ApiError(415, 'unsupported_media_type', 'body: Content-Type must be application/json');

/** The media types a JSON body may have, and the 415 for any other. */
export interface JsonMediaTypes {
  readonly types: readonly string[];
  readonly refusal: ApiError;
}

const JSON_ONLY: JsonMediaTypes = { types: ['application/json'], refusal: NOT_JSON_TYPE };
const NOT_UTF8_CHARSET = new ApiError(415, 'unsupported_media_type', 'body: charset must be utf-8');
const NOT_JSON = ApiError.invalid('body', 'is not valid JSON');
const REPEATED_MEMBER = ApiError.invalid('body', 'repeats a member name within one object: send each once');

/** The media type of a Content-Type field, lowercased, as type-is (express's `request.is`) reads it. */
function mediaType(header: string | undefined): { type: string; charset: string | undefined } | undefined {
  if (header === undefined) return undefined;
  try {
    const { type, parameters } = parseContentType(header);
    return { type, charset: parameters.charset };
  } catch {
    return undefined;
  }
}

/**
 * Reads a request's JSON body. Accepts only an `application/json` body, or one of `accepted`'s types (415 otherwise, and for a
 * charset other than UTF-8, the only one RFC 8259 allows) of at most 64 KiB (413), that is valid
 * UTF-8, escapes no unpaired surrogate, nests at most 64 deep and parses as JSON without rounding
 * big integers and names no member twice in one object (400 naming `body` for each). A request without a body gets 400 `body: is
 * required`, whatever its Content-Type says. Whether the value is an object is the schema's
 * question.
 *
 * @throws ApiError, or raw-body's errors (`toApiError` translates them).
 */
export async function readJsonBody(request: IncomingMessage, accepted: JsonMediaTypes = JSON_ONLY): Promise<unknown> {
  // type-is's definition of a body: a declared length (even 0) or a chunked transfer.
  if (request.headers['content-length'] === undefined && request.headers['transfer-encoding'] === undefined) throw MISSING;
  const media = mediaType(request.headers['content-type']);
  if (media === undefined || !accepted.types.includes(media.type)) throw accepted.refusal;
  if (media.charset !== undefined && media.charset.toLowerCase() !== 'utf-8') throw NOT_UTF8_CHARSET;
  // Refused on its declared length, before a byte of it is read. body-parser would reach the same
  // 413 only after reading the whole body, holding the connection for as long as a client
  // cares to send.
  if (Number(request.headers['content-length']) > MAX_BODY_BYTES) throw TOO_LARGE;
  const bytes = await readBytes(request);
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw ApiError.invalid('body', 'is not valid UTF-8');
  }
  if (text.trim() === '') throw MISSING;
  const problem = jsonTextProblem(text);
  if (problem !== undefined) throw ApiError.invalid('body', problem);
  try {
    return parseJsonLosslessly(text);
  } catch (error) {
    // RFC 8259 allows a repeated member name but leaves its meaning open: refused, and said so.
    throw /^Duplicate key /.test((error as Error).message) ? REPEATED_MEMBER : NOT_JSON;
  }
}
