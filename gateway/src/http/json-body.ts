import { parse as parseContentType } from 'content-type';
import express, { type RequestHandler } from 'express';
import { ApiError } from './api-error';
import { jsonTextProblem, parseJsonLosslessly } from './lossless-json';

/** Largest request body accepted, in bytes. */
export const MAX_BODY_BYTES = 64 * 1024;

// Raw bytes, not text: body-parser's decoder would turn invalid UTF-8 into U+FFFD unseen.
const readBytes = express.raw({ type: () => true, limit: MAX_BODY_BYTES });
const utf8 = new TextDecoder('utf-8', { fatal: true });
const TOO_LARGE = new ApiError(413, 'payload_too_large', 'body: larger than 64 KiB');
const MISSING = ApiError.invalid('body', 'is required: send a JSON object');

/**
 * Accepts only an `application/json` body (415 otherwise, and for a charset other than UTF-8, the
 * only one RFC 8259 allows) of at most 64 KiB (413), that is valid UTF-8, escapes no unpaired
 * surrogate, nests at most 64 deep and parses as JSON without rounding big integers (400 naming
 * `body` for each). A request without a body gets 400 `body: is required`, whatever its
 * Content-Type says. The parsed value is `request.body`; whether it is an object is the schema's
 * question.
 */
export const jsonBody: RequestHandler[] = [
  (request, _response, next) => {
    // type-is's definition of a body: a declared length (even 0) or a chunked transfer.
    if (request.headers['content-length'] === undefined && request.headers['transfer-encoding'] === undefined) {
      next(MISSING);
      return;
    }
    if (request.is('application/json') !== 'application/json') {
      next(new ApiError(415, 'unsupported_media_type', 'body: Content-Type must be application/json'));
      return;
    }
    const charset = parseContentType(request.headers['content-type']!).parameters.charset;
    if (charset !== undefined && charset.toLowerCase() !== 'utf-8') {
      next(new ApiError(415, 'unsupported_media_type', 'body: charset must be utf-8'));
      return;
    }
    // Refused on its declared length, before a byte of it is read. body-parser would reach the same
    // 413 only after reading the whole body, holding the connection for as long as a client
    // cares to send.
    if (Number(request.headers['content-length']) > MAX_BODY_BYTES) {
      next(TOO_LARGE);
      return;
    }
    next();
  },
  readBytes,
  (request, _response, next) => {
    const bytes: unknown = request.body;
    let text: string;
    try {
      text = Buffer.isBuffer(bytes) ? utf8.decode(bytes) : '';
    } catch {
      next(ApiError.invalid('body', 'is not valid UTF-8'));
      return;
    }
    if (text.trim() === '') {
      next(MISSING);
      return;
    }
    const problem = jsonTextProblem(text);
    if (problem !== undefined) {
      next(ApiError.invalid('body', problem));
      return;
    }
    try {
      request.body = parseJsonLosslessly(text);
    } catch {
      next(ApiError.invalid('body', 'is not valid JSON'));
      return;
    }
    next();
  },
];
