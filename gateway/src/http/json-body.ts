import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseContentType } from 'content-type';
import express from 'express';
import { ApiError } from './api-error';
import { jsonTextProblem, parseJsonLosslessly } from './lossless-json';

/** Largest request body accepted, in bytes. */
export const MAX_BODY_BYTES = 64 * 1024;

// Raw bytes, not text: body-parser's decoder would turn invalid UTF-8 into U+FFFD unseen. It also
// undoes a gzip, deflate, br or zstd Content-Encoding, within the same limit (the decoded bytes
// count), and refuses any other coding.
const readBytes = express.raw({ type: () => true, limit: MAX_BODY_BYTES });
const utf8 = new TextDecoder('utf-8', { fatal: true });
const TOO_LARGE = new ApiError(413, 'payload_too_large', 'body: larger than 64 KiB');
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
 * @throws ApiError, or body-parser's errors (`toApiError` translates them).
 */
export async function readJsonBody(request: IncomingMessage, response: ServerResponse, accepted: JsonMediaTypes = JSON_ONLY): Promise<unknown> {
  // type-is's definition of a body: a declared length (even 0) or a chunked transfer.
  if (request.headers['content-length'] === undefined && request.headers['transfer-encoding'] === undefined) throw MISSING;
  const media = mediaType(request.headers['content-type']);
  if (media === undefined || !accepted.types.includes(media.type)) throw accepted.refusal;
  if (media.charset !== undefined && media.charset.toLowerCase() !== 'utf-8') throw NOT_UTF8_CHARSET;
  // Refused on its declared length, before a byte of it is read. body-parser would reach the same
  // 413 only after reading the whole body, holding the connection for as long as a client
  // cares to send.
  if (Number(request.headers['content-length']) > MAX_BODY_BYTES) throw TOO_LARGE;
  const bytes = await new Promise<unknown>((resolve, reject) => {
    readBytes(request as express.Request, response as express.Response, (error?: unknown) =>
      error === undefined ? resolve((request as { body?: unknown }).body) : reject(error),
    );
  });
  let text: string;
  try {
    text = Buffer.isBuffer(bytes) ? utf8.decode(bytes) : '';
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
