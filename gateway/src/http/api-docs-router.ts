import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Router } from 'express';
import { methodNotAllowed } from './error-handler';

/** Where the page is served. Its files are below it, and the page refers to them by absolute path. */
export const API_DOCS_PATH = '/docs';

/**
 * The page's Content-Security-Policy. Everything comes from the gateway itself; the one addition
 * to `'self'` is `img-src data:`, for the icons swagger-ui.css embeds as data: URIs.
 * No inline script or style, no eval, no framing (docs/decisions.md).
 */
export const API_DOCS_CSP = [
  "default-src 'self'",
  "img-src 'self' data:",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

// The page, and the script that starts Swagger UI on the served document: no inline script, so
// the CSP needs no 'unsafe-inline'. The content (operations, descriptions, examples) is entirely
// the OpenAPI document's.
const html = (assets: string): string => `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Pet store API reference</title>
<link rel="stylesheet" href="${assets}/swagger-ui.css">
<link rel="icon" type="image/png" href="${assets}/favicon-32x32.png" sizes="32x32">
</head>
<body>
<div id="api-docs"></div>
<script src="${assets}/swagger-ui-bundle.js"></script>
<script src="${API_DOCS_PATH}/api-docs.js"></script>
</body>
</html>
`;

// validatorUrl null: Swagger UI would otherwise send the document to validator.swagger.io.
const START_SCRIPT = `window.ui = SwaggerUIBundle({
  url: '/v1/openapi.json',
  dom_id: '#api-docs',
  validatorUrl: null,
  deepLinking: true,
});
`;

/** The files of swagger-ui-dist the page uses, with their source maps for DevTools. Nothing else of it is served. */
const ASSETS = [
  'swagger-ui-bundle.js',
  'swagger-ui-bundle.js.map',
  'swagger-ui.css',
  'swagger-ui.css.map',
  'favicon-32x32.png',
] as const;

/** A year, `immutable`: the assets' URL names swagger-ui-dist's version, so an upgrade is a new URL. */
const ASSET_MAX_AGE_MS = 365 * 24 * 3600 * 1000;

export interface ApiDocsRouterOptions {
  /** swagger-ui-dist's directory; default: the installed package's. */
  readonly assetDirectory?: string;
}

/** The installed swagger-ui-dist's directory, found without loading its large bundle into this process. */
export function swaggerUiDirectory(): string {
  return join(require.resolve('swagger-ui-dist/package.json'), '..');
}

/**
 * `GET /docs`: the API reference, Swagger UI rendering `GET /v1/openapi.json`, with "Try it out"
 * against this gateway. Every file comes from the gateway (the installed swagger-ui-dist package):
 * no CDN, so the page works offline and under the strict {@link API_DOCS_CSP}. The HTML and the
 * start script are revalidated on every visit, so a new release's page is seen at once; the
 * assets, under a path that names swagger-ui-dist's version, are cached for a year.
 * Any other path below /docs falls through to the JSON 404.
 *
 * Throws at creation when an asset is missing, so a broken install fails at start, not on a visit.
 */
export function createApiDocsRouter(options: ApiDocsRouterOptions = {}): Router {
  const directory = options.assetDirectory ?? swaggerUiDirectory();
  const { version } = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as { version: string };
  const assets = `${API_DOCS_PATH}/swagger-ui-${version}`;
  const page = html(assets);
  const files = new Map<string, string>();
  for (const name of ASSETS) {
    const path = join(directory, name);
    if (!statSync(path, { throwIfNoEntry: false })?.isFile()) throw new Error(`API docs asset missing: ${path}`);
    files.set(name, path);
  }
  const notAllowed = methodNotAllowed('GET, HEAD');
  const allow = (): never => {
    throw notAllowed;
  };
  const router = Router({ caseSensitive: false, strict: false });
  router
    .route(API_DOCS_PATH)
    .get((_request, response) => {
      response.set({ 'Cache-Control': 'no-cache', 'Content-Security-Policy': API_DOCS_CSP, 'X-Content-Type-Options': 'nosniff' });
      response.type('html').send(page);
    })
    .all(allow);
  router
    .route(`${API_DOCS_PATH}/api-docs.js`)
    .get((_request, response) => {
      response.set({ 'Cache-Control': 'no-cache', 'X-Content-Type-Options': 'nosniff' });
      response.type('text/javascript').send(START_SCRIPT);
    })
    .all(allow);
  router.all(`${assets}/:asset`, (request, response, next) => {
    const path = files.get(request.params.asset!);
    if (path === undefined) {
      next();
      return;
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') allow();
    response.set('X-Content-Type-Options', 'nosniff');
    response.sendFile(path, { maxAge: ASSET_MAX_AGE_MS, immutable: true }, (error: unknown) => {
      // A file that went missing after start-up is the server's fault (500, logged), never the
      // 4xx its error's own status would make of it; a client gone mid-file needs no answer.
      if (error !== undefined && !response.headersSent) next(new Error(`API docs asset unreadable: ${path}`, { cause: error }));
    });
  });
  return router;
}
