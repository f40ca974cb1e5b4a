import express, { type RequestHandler } from 'express';
import { ApiError } from './api-error';
import { parseJsonLosslessly } from './lossless-json';

/** Largest request body accepted, in bytes. */
export const MAX_BODY_BYTES = 64 * 1024;

const readText = express.text({ type: () => true, limit: MAX_BODY_BYTES, defaultCharset: 'utf-8' });
const TOO_LARGE = new ApiError(413, 'payload_too_large', 'body: larger than 64 KiB');

/**
 * Accepts only an `application/json` body (415 otherwise) of at most 64 KiB (413), and parses it
 * without rounding big integers (400 for anything that is not JSON). The parsed value is
 * `request.body`; whether it is an object is the schema's question.
 */
export const jsonBody: RequestHandler[] = [
  (request, _response, next) => {
    if (request.is('application/json') !== 'application/json') {
      next(new ApiError(415, 'unsupported_media_type', 'body: Content-Type must be application/json'));
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
  readText,
  (request, _response, next) => {
    const text: unknown = request.body;
    if (typeof text !== 'string' || text.trim() === '') {
      next(ApiError.invalid('body', 'must be a JSON object'));
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
