/**
 * The proxied routes' part of the document: each configured route as generic operations, with the
 * statuses the gateway itself gives and the upstream's responses passed through.
 */
import { openApiDocument } from './document';
import { commonErrors, error, withRateLimitHeaders } from './responses';

/** Where a proxied path item says which configured prefix it stands for. */
export const PROXIED_PREFIX = 'x-proxied-prefix';

/** The tag of every proxied operation, listed in the document's tags once a route is configured. */
const PROXIED_TAG = {
  name: 'proxied',
  description: 'Routes the gateway passes to HTTP services behind it, configured for this deployment (ROUTES_FILE).',
};

/**
 * What the document says of a proxied route: the fields of `upstream/routes-file.ts`'s ProxyRoute
 * that it shows, declared here so that this layer does not import the one above it.
 */
export interface DocumentedRoute {
  readonly prefix: string;
  readonly methods: readonly string[];
  readonly timeoutMs: number;
  readonly bodyLimitBytes: number | undefined;
  readonly plans: readonly string[] | undefined;
}

/**
 * The OpenAPI document with each configured route as generic operations: its prefix, and any path
 * below it as `{rest}`, for each allowed method (HEAD with GET), under the same bearer security.
 * The documented statuses are the gateway's own answers, with the Error body; everything else is
 * the upstream's, passed through unchanged (`default`).
 */
export function openApiDocumentFor(routes: readonly DocumentedRoute[]): typeof openApiDocument {
  if (routes.length === 0) return openApiDocument;
  const paths: Record<string, object> = {};
  for (const route of routes) {
    const path = route.prefix.slice('/v1'.length);
    paths[path] = proxiedPathItem(route, false);
    paths[`${path}/{rest}`] = proxiedPathItem(route, true);
  }
  return {
    ...openApiDocument,
    tags: [...openApiDocument.tags, PROXIED_TAG],
    paths: { ...openApiDocument.paths, ...withRateLimitHeaders(paths) },
  };
}

function proxiedPathItem(route: DocumentedRoute, below: boolean): object {
  const name = route.prefix.slice('/v1/'.length).replace(/[^A-Za-z0-9]+(.)?/g, (_match, next: string | undefined) => (next ?? '').toUpperCase());
  const item: Record<string, unknown> = { [PROXIED_PREFIX]: route.prefix };
  for (const method of route.methods) {
    if (method === 'HEAD' && route.methods.includes('GET')) continue;
    item[method.toLowerCase()] = {
      operationId: `${name}${below ? 'Below' : ''}${method[0]}${method.slice(1).toLowerCase()}`,
      tags: [PROXIED_TAG.name],
      summary: `Proxied to an HTTP service behind the gateway${below ? ' (any path below the prefix)' : ''}.`,
      description:
        'The request goes to the upstream without `Authorization`, with `X-Api-Key-Id`, `X-Plan`, `X-Request-Id` and ' +
        '`X-Forwarded-*`; its response, errors included, comes back unchanged. The statuses listed are the ' +
        "gateway's own answers; the upstream's other responses fall under `2XX` and `default`." +
        (route.methods.includes('GET') ? ' HEAD is answered wherever GET is.' : ''),
      parameters: below
        ? [{ name: 'rest', in: 'path', required: true, description: 'The rest of the path; may contain `/`.', schema: { type: 'string' } }]
        : [],
      ...(['POST', 'PUT', 'PATCH'].includes(method) ? { requestBody: { required: false, content: { '*/*': { schema: {} } } } } : {}),
      responses: proxiedResponses(route),
    };
  }
  return item;
}

function proxiedResponses(route: DocumentedRoute): Record<string, object> {
  return {
    '2XX': { description: "The upstream's success, passed through unchanged." },
    default: { description: "The upstream's response, passed through unchanged." },
    '400': error('Transfer-Encoding other than chunked, a body of unknown length on DELETE or OPTIONS, or two Authorization fields.', ['invalid_request']),
    '401': commonErrors['401'],
    ...(route.plans === undefined ? {} : { '403': error(`The key's plan may not use this route; allowed: ${route.plans.join(', ')}.`, ['forbidden']) }),
    '405': commonErrors['405'],
    ...(route.bodyLimitBytes === undefined ? {} : { '413': error(`Body over ${route.bodyLimitBytes} bytes.`, ['payload_too_large']) }),
    '429': error('Over the rate limit, or the key is temporarily banned.', ['rate_limited', 'api_key_banned']),
    '500': commonErrors['500'],
    '502': error('The upstream refused the connection, or failed before its response began.', ['bad_gateway']),
    '504': error(`The upstream was silent for ${route.timeoutMs} ms.`, ['gateway_timeout']),
  };
}
