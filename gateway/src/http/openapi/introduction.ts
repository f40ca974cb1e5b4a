/**
 * The document's introduction: what applies to every operation (authentication, rate limits,
 * pagination, deprecation, errors), written from the same declarations the operations use.
 */
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '@petstore/proto';
import { errorCodeMarkdown } from '../api-error';
import { SUNSET_HTTP_DATE } from '../deprecation';
import { DEPRECATION_HEADERS, RATE_LIMIT_HEADERS } from './responses';

/** The summary of the guide the document's introduction folds away (see `apiDescription`). */
export const GUIDE_SUMMARY = 'Guide: authentication, rate limits, pagination, deprecation and errors';

function headerList(headers: Record<string, { description: string; example?: unknown }>): string {
  return Object.entries(headers)
    .map(([name, { description, example }]) => `- \`${name}\`${example === undefined ? '' : ` (\`${String(example)}\`)`}: ${description}`)
    .join('\n');
}

/**
 * The document's introduction, the first thing the API reference at /docs shows: two lines, then
 * what applies to every operation, from the same declarations the operations use, folded in a
 * `<details>` element, so that Authorize and the operations come first on the page.
 */
export function apiDescription(): string {
  return [
    'A store of animals, behind an API gateway. This reference is rendered from the OpenAPI document served at ' +
      '[`GET /v1/openapi.json`](/v1/openapi.json), which needs no key. Set your API key with **Authorize**, ' +
      'then **Try it out** on any operation.',
    `<details><summary>${GUIDE_SUMMARY}</summary>`,
    '## Authentication',
    'Every operation needs `Authorization: Bearer <API key>`; in this page, set it with **Authorize** before ' +
      '**Try it out**. A missing, malformed or unknown key is 401 `unauthorized` with a `WWW-Authenticate` challenge.',
    '## Rate limits',
    "Each API key's plan allows so many requests per minute and per day, in fixed windows aligned to UTC; requests " +
      'without a valid key, this page included, are limited per client IP. Every `/v1` response carries:',
    headerList(RATE_LIMIT_HEADERS),
    'Over a limit the answer is 429 `rate_limited` with `Retry-After`; a key that keeps sending while limited is ' +
      'banned for a while: 429 `api_key_banned`.',
    '## Pagination',
    '`GET /pets` answers a bare JSON array of at most `limit` pets (default ' +
      `${DEFAULT_PAGE_SIZE}, at most ${MAX_PAGE_SIZE}), in ascending id order. When more exist, the response carries ` +
      'a `Link` header with `rel="next"`: follow it, unchanged, for the next page. Its `cursor` is opaque.',
    '## Changes and concurrency',
    '`PATCH /pets/{petId}` changes the fields it names (a JSON Merge Patch); `DELETE` removes the pet. `status` changes only ' +
      'available → pending, pending → available, available or pending → sold; sold is final, and anything else is 409 ' +
      '`invalid_transition`. Every answer of one pet carries a strong `ETag`; send it back as `If-Match` so that your change ' +
      'applies only to the pet as you read it (412 `precondition_failed` otherwise, with the current `ETag`). Without it a change ' +
      'applies to the pet as it is: the last write wins. Lists carry no ETags.',
    '## Deprecation',
    `\`GET /pets/{petId}\` is deprecated and answers 410 \`gone\` from ${SUNSET_HTTP_DATE}; \`PATCH\` and \`DELETE\` on that path are not. Until then its responses carry:`,
    headerList(DEPRECATION_HEADERS),
    '## Errors',
    'Every error is the `Error` body `{code, message, status}` with `Content-Type: application/json`: never HTML, ' +
      'never a stack trace. A 400\'s message starts with the offending field. `code` is one of this closed set:',
    errorCodeMarkdown(),
    'Numbers: `id` and `categoryId` are int64 and never rounded on the wire. Try it out shows responses through ' +
      "the browser's JSON parser, which rounds integers above 2^53; the body the gateway sent is exact.",
    '</details>',
  ].join('\n\n');
}
