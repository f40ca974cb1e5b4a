import { extname } from 'node:path';
import { listenOnLoopback } from './loopback-server';

/** A static site on a loopback port of its own: another origin than the gateway's. */
export interface CrossOriginPage {
  /** As browsers send it in `Origin`: what CORS_ORIGINS lists to allow this page. */
  readonly origin: string;
  /** The page itself (`/`), for `page.goto`. */
  readonly url: string;
  close(): Promise<void>;
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
};

const BLANK_PAGE = '<!doctype html><html><head><meta charset="utf-8"><title>cross-origin page</title></head><body></body></html>';

/**
 * Serves `files` (path to text; `/` is a blank HTML page unless given) on 127.0.0.1, port 0, so a
 * browser test can load a page there and call the gateway, on another port and so another
 * origin, with `fetch` from `page.evaluate`. A script the page needs, such as a bundled client,
 * can be served beside it and loaded with a `<script>` element. Anything else is 404.
 */
export async function serveCrossOriginPage(files: Readonly<Record<string, string>> = {}): Promise<CrossOriginPage> {
  const served: Record<string, string> = { '/': BLANK_PAGE, ...files };
  const server = await listenOnLoopback((request, response) => {
    const path = new URL(request.url ?? '/', 'http://page').pathname;
    const body = served[path];
    if (body === undefined) {
      response.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
      return;
    }
    const type = CONTENT_TYPES[extname(path)] ?? CONTENT_TYPES['.html']!;
    response.writeHead(200, { 'Content-Type': type, 'Cache-Control': 'no-store' }).end(body);
  });
  return { origin: server.base, url: `${server.base}/`, close: server.close };
}
