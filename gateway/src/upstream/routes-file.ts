import { readYamlFile } from '../config-file';
import { openApiDocument } from '../http/openapi/document';
import { PLAN_NAMES, type PlanName } from '../rate-limit/plans';

/** One configured prefix under /v1, proxied to an HTTP upstream (docs/routes.md). */
export interface ProxyRoute {
  /** `/v1/…`, one or more path segments below /v1, no trailing slash; matched case-insensitively. */
  readonly prefix: string;
  /** The path below the prefix is appended to this URL's path. */
  readonly upstream: URL;
  /** Upper case; HEAD is allowed wherever GET is. */
  readonly methods: readonly string[];
  /** Longest the upstream may stay silent: before its response, and between chunks of either body. */
  readonly timeoutMs: number;
  /** Largest request body; undefined: any size. */
  readonly bodyLimitBytes: number | undefined;
  /** Plans whose keys may call the route; undefined: every plan. */
  readonly plans: readonly PlanName[] | undefined;
}

export const ROUTE_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
const FIELDS = new Set(['prefix', 'upstream', 'methods', 'timeoutMs', 'bodyLimitBytes', 'plans']);
const SEGMENT = /^[A-Za-z0-9._~-]+$/;

/**
 * The gateway's own /v1 paths as segment lists, a path parameter as `*`: the pets routes (from the
 * OpenAPI document, so a new built-in route is protected without a second list) and the document.
 */
const BUILT_IN = [...Object.keys(openApiDocument.paths), '/openapi.json'].map((path) => ({
  path: `/v1${path}`,
  segments: ['v1', ...path.split('/').slice(1)].map((segment) => (segment.startsWith('{') ? '*' : segment.toLowerCase())),
}));

/**
 * Reads a YAML (or JSON) routes file. @throws Error with a one-line message that starts
 * `ROUTES_FILE <path>:` and names the bad entry, or the line and column of a syntax error.
 */
export function loadRoutesFile(path: string): readonly ProxyRoute[] {
  const source = `ROUTES_FILE ${path}`;
  return parseRoutes(readYamlFile(path, source), source);
}

/** Validates a parsed routes document; see {@link loadRoutesFile}. */
export function parseRoutes(document: unknown, source = 'routes file'): readonly ProxyRoute[] {
  const entries = (document as { routes?: unknown } | null)?.routes;
  if (!Array.isArray(entries)) throw new Error(`${source}: must have a "routes" list`);
  const routes = entries.map((entry: unknown, index) => parseRoute(entry, `${source}: routes[${index}]`));
  routes.forEach((route, index) => {
    const other = routes.findIndex((candidate, at) => at !== index && nests(segments(candidate.prefix), segments(route.prefix)));
    if (other !== -1) {
      // Express would hand the request to whichever came first: the order of the file would decide.
      throw new Error(`${source}: routes[${index}] "${route.prefix}": overlaps routes[${other}] "${routes[other]!.prefix}"`);
    }
  });
  return Object.freeze(routes);
}

function parseRoute(entry: unknown, where: string): ProxyRoute {
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) throw new Error(`${where}: must be a mapping`);
  const fields = entry as Record<string, unknown>;
  const { prefix } = fields;
  if (typeof prefix !== 'string' || !/^\/v1(?:\/[^/]+)+$/.test(prefix) || !prefix.split('/').slice(1).every((s) => SEGMENT.test(s))) {
    throw new Error(`${where}: prefix must be /v1/ followed by path segments of letters, digits, ".", "_", "~" or "-", without a trailing slash`);
  }
  const named = `${where} "${prefix}"`;
  const unknown = Object.keys(fields).find((field) => !FIELDS.has(field));
  if (unknown !== undefined) throw new Error(`${named}: unknown field "${unknown}"; known: ${[...FIELDS].join(', ')}`);
  const builtIn = BUILT_IN.find((own) => nests(own.segments, segments(prefix)));
  if (builtIn !== undefined) throw new Error(`${named}: would shadow the gateway's own ${builtIn.path}`);
  return Object.freeze({
    prefix,
    upstream: parseUpstream(fields.upstream, named),
    methods: parseMethods(fields.methods, named),
    timeoutMs: positiveInteger(fields.timeoutMs, `${named}: timeoutMs`),
    bodyLimitBytes: fields.bodyLimitBytes === undefined ? undefined : positiveInteger(fields.bodyLimitBytes, `${named}: bodyLimitBytes`),
    plans: fields.plans === undefined ? undefined : parsePlans(fields.plans, named),
  });
}

function parseUpstream(value: unknown, where: string): URL {
  let url: URL | undefined;
  try {
    url = typeof value === 'string' ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (url === undefined || url.protocol !== 'http:' || url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') {
    throw new Error(`${where}: upstream must be an http:// URL without credentials, query or fragment`);
  }
  return url;
}

function parseMethods(value: unknown, where: string): readonly string[] {
  const known: readonly string[] = ROUTE_METHODS;
  if (!Array.isArray(value) || value.length === 0 || !value.every((method) => typeof method === 'string' && known.includes(method))) {
    throw new Error(`${where}: methods must be a non-empty list of ${ROUTE_METHODS.join(', ')}`);
  }
  const methods = new Set(value as string[]);
  if (methods.has('GET')) methods.add('HEAD');
  return Object.freeze([...methods]);
}

function parsePlans(value: unknown, where: string): readonly PlanName[] {
  if (!Array.isArray(value) || value.length === 0 || !value.every((plan) => PLAN_NAMES.includes(plan as PlanName))) {
    throw new Error(`${where}: plans must be a non-empty list of ${PLAN_NAMES.join(', ')}`);
  }
  return Object.freeze([...new Set(value as PlanName[])]);
}

function positiveInteger(value: unknown, where: string): number {
  if (!Number.isSafeInteger(value) || (value as number) < 1) throw new Error(`${where} must be a positive integer`);
  return value as number;
}

function segments(prefix: string): string[] {
  return prefix.toLowerCase().split('/').slice(1);
}

/** Whether one path is the other or lies below it, segment by segment (`*` matches any segment). */
function nests(a: readonly string[], b: readonly string[]): boolean {
  const shorter = Math.min(a.length, b.length);
  for (let index = 0; index < shorter; index += 1) {
    if (a[index] !== '*' && b[index] !== '*' && a[index] !== b[index]) return false;
  }
  return true;
}
