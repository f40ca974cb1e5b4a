import type { ServerResponse } from 'node:http';
import { ApiError } from './api-error';

/** When `GET /v1/pets/{petId}` was deprecated: the release of this gateway. */
export const DEPRECATED_AT = Date.UTC(2026, 10, 21);
/** When it stops answering, as the Sunset field (RFC 8594) and the API reference give it. */
export const SUNSET_HTTP_DATE = 'Thu, 05 Dec 2030 00:00:00 GMT';
/** {@link SUNSET_HTTP_DATE} in ms since the epoch. */
export const SUNSET_AT = Date.parse(SUNSET_HTTP_DATE);

const HEADERS = {
  Deprecation: `@${DEPRECATED_AT / 1000}`,
  Sunset: SUNSET_HTTP_DATE,
  Link: '</v1/pets>; rel="successor-version"',
};

const GONE = new ApiError(410, 'gone', `this operation was removed at ${SUNSET_HTTP_DATE}; use GET /v1/pets?status=`);

/**
 * Marks the response of a deprecated route (RFC 9745 Deprecation, RFC 8594 Sunset, a successor
 * link); from the sunset instant on, the route answers 410 instead. `now` is injected so the
 * switch can be tested.
 *
 * @throws ApiError 410 `gone` once the sunset has passed.
 */
export function markDeprecated(response: ServerResponse, now: number): void {
  for (const name in HEADERS) response.setHeader(name, HEADERS[name as keyof typeof HEADERS]);
  if (now >= SUNSET_AT) throw GONE;
}
