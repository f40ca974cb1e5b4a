import type { KubeObject } from './kubectl';

interface ModelClass {
  readonly apiVersion: string;
  readonly kind: string;
  readonly prototype: { validate(this: unknown): void };
}

/**
 * The kubernetes-models class for an apiVersion and kind: JSON-schema validators generated from
 * the Kubernetes OpenAPI document and shipped in the package, so validation is offline.
 */
function modelClass(apiVersion: string, kind: string): ModelClass | undefined {
  // "v1" is the core group; "apps/v1" is the module kubernetes-models/apps/v1, and so on.
  let models: Record<string, unknown>;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    models = require(`kubernetes-models/${apiVersion}`) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const model = models[kind] as ModelClass | undefined;
  return model !== undefined && model.apiVersion === apiVersion && model.kind === kind ? model : undefined;
}

/**
 * Validates an object against its Kubernetes OpenAPI schema. Returns the problems, empty when valid.
 *
 * The schemas allow unknown fields (as the API server's OpenAPI document does), while kubectl
 * apply rejects them (strict field validation). So a typo such as `readOnlyRootFileSystem` is
 * caught here too: the generated validators read every field their schema declares, so a field
 * that none read, in an object whose keys were never enumerated (as a map's are), is unknown.
 */
export function validateObject(object: KubeObject): string[] {
  const where = `${object.kind}/${object.metadata?.name ?? '?'}`;
  const model = modelClass(object.apiVersion, object.kind);
  if (model === undefined) return [`${where}: no schema for ${object.apiVersion} ${object.kind}`];
  const read = new Set<string>();
  const enumerated = new Set<string>();
  try {
    model.prototype.validate.call(watch(unwrapSecretData(object), '', read, enumerated));
  } catch (error) {
    return [`${where}: ${(error as Error).message}`];
  }
  return unreadFields(object, '', read, enumerated).map((path) => `${where}: unknown field ${path}`);
}

/**
 * kustomize wraps a generated Secret's base64 values at 70 columns. The API server decodes them
 * with Go's base64 decoder, which skips line breaks, but the schema's "byte" format does not.
 */
function unwrapSecretData(object: KubeObject): KubeObject {
  if (object.kind !== 'Secret' || object.data === null || typeof object.data !== 'object') return object;
  const data = Object.fromEntries(Object.entries(object.data).map(([key, value]) => [key, typeof value === 'string' ? value.replace(/[\r\n]/g, '') : value]));
  return { ...object, data };
}

function watch(value: unknown, path: string, read: Set<string>, enumerated: Set<string>): unknown {
  if (value === null || typeof value !== 'object') return value;
  return new Proxy(value, {
    get(target, key, receiver) {
      const child = Reflect.get(target, key, receiver) as unknown;
      if (typeof key !== 'string') return child;
      read.add(`${path}/${key}`);
      return watch(child, `${path}/${key}`, read, enumerated);
    },
    ownKeys(target) {
      enumerated.add(path);
      return Reflect.ownKeys(target);
    },
  });
}

function unreadFields(value: unknown, path: string, read: Set<string>, enumerated: Set<string>): string[] {
  if (value === null || typeof value !== 'object') return [];
  if (Array.isArray(value)) return value.flatMap((item, index) => unreadFields(item, `${path}/${index}`, read, enumerated));
  return Object.entries(value).flatMap(([key, child]) => {
    const childPath = `${path}/${key}`;
    if (!enumerated.has(path) && !read.has(childPath)) return [childPath];
    return unreadFields(child, childPath, read, enumerated);
  });
}
