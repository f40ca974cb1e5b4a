import { createHash } from 'node:crypto';
import { readYamlFile } from '../config-file';
import { type Limits, PLAN_LIMITS, PLAN_NAMES, type PlanName } from '../rate-limit/plans';

/** A known API key, as the rest of the gateway sees it: never the secret itself. */
export interface ApiKey {
  /** Public identifier, safe to log. */
  readonly id: string;
  readonly plan: PlanName;
  readonly limits: Limits;
}

const DIGEST = /^[0-9a-f]{64}$/;
const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * The keys file, held as SHA-256 digests only: a request's key is hashed and looked up, so the
 * secrets are never stored and the lookup time does not depend on how much of a guess matched.
 */
export class ApiKeyStore {
  private constructor(private readonly byDigest: ReadonlyMap<string, ApiKey>) {}

  /**
   * Reads a YAML (or JSON) keys file. @throws Error with a one-line message that starts
   * `API_KEYS_FILE <path>:` and names the bad entry, or the line and column of a syntax error.
   */
  static load(path: string): ApiKeyStore {
    const source = `API_KEYS_FILE ${path}`;
    return ApiKeyStore.fromDocument(readYamlFile(path, source), source);
  }

  static fromDocument(document: unknown, source = 'keys file'): ApiKeyStore {
    const entries = (document as { keys?: unknown } | null)?.keys;
    if (!Array.isArray(entries)) throw new Error(`${source}: must have a "keys" list`);
    const byDigest = new Map<string, ApiKey>();
    const ids = new Set<string>();
    entries.forEach((entry: unknown, index) => {
      const { key, sha256 } = parseEntry(entry, `${source}: keys[${index}]`);
      const where = `${source}: key "${key.id}"`;
      if (ids.has(key.id)) throw new Error(`${where}: duplicate id`);
      if (byDigest.has(sha256)) throw new Error(`${where}: duplicate sha256`);
      ids.add(key.id);
      byDigest.set(sha256, Object.freeze(key));
    });
    return new ApiKeyStore(byDigest);
  }

  /** The key whose secret is `secret`, if any. */
  find(secret: string): ApiKey | undefined {
    return this.byDigest.get(sha256Hex(secret));
  }
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function parseEntry(entry: unknown, where: string): { key: ApiKey; sha256: string } {
  if (entry === null || typeof entry !== 'object') throw new Error(`${where}: must be a mapping`);
  const { id, sha256, plan, limits } = entry as Record<string, unknown>;
  if (typeof id !== 'string' || !KEY_ID.test(id)) throw new Error(`${where}: id must match ${KEY_ID}`);
  const named = `${where.replace(/keys\[\d+\]$/, '')}key "${id}"`;
  if (typeof sha256 !== 'string' || !DIGEST.test(sha256)) {
    throw new Error(`${named}: sha256 must be 64 lowercase hex characters`);
  }
  if (typeof plan !== 'string' || !PLAN_NAMES.includes(plan as PlanName)) {
    throw new Error(`${named}: plan must be one of ${PLAN_NAMES.join(', ')}`);
  }
  if (plan === 'enterprise' && limits === undefined) throw new Error(`${named}: enterprise keys need limits`);
  const base = plan === 'enterprise' ? undefined : PLAN_LIMITS[plan as Exclude<PlanName, 'enterprise'>];
  return { key: { id, plan: plan as PlanName, limits: parseLimits(limits, base, named) }, sha256 };
}

function parseLimits(limits: unknown, base: Limits | undefined, where: string): Limits {
  if (limits === undefined) return base!;
  if (limits === null || typeof limits !== 'object') throw new Error(`${where}: limits must be a mapping`);
  const { perMinute, perDay } = limits as Record<string, unknown>;
  const pick = (value: unknown, fallback: number | undefined, name: string): number => {
    const chosen = value ?? fallback;
    if (!Number.isSafeInteger(chosen) || (chosen as number) < 1) {
      throw new Error(`${where}: limits.${name} must be a positive integer`);
    }
    return chosen as number;
  };
  return { perMinute: pick(perMinute, base?.perMinute, 'perMinute'), perDay: pick(perDay, base?.perDay, 'perDay') };
}
