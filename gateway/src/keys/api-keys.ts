import { hash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { KEY_ID } from '../config';
import { parseYamlText } from '../config-file';
import { checksumMatches, hasIssuedPrefix, KEY_ENVIRONMENTS } from './api-key-secret';
import { type Limits, PLAN_LIMITS, PLAN_NAMES, type PlanName } from '../rate-limit/plans';

/** A known API key, as the rest of the gateway sees it: never the secret itself. */
export interface ApiKey {
  /** Public identifier, safe to log; the rate-limit budget belongs to it, whichever secret is used. */
  readonly id: string;
  readonly plan: PlanName;
  readonly limits: Limits;
}

/**
 * Why a bearer secret was not accepted: not in the file, a damaged issued secret (refused before
 * any lookup), or the secret of a key that has expired or been revoked. The last two say nothing
 * that the holder of the secret did not already know.
 */
export type KeyRefusal = 'unknown' | 'checksum' | 'expired' | 'revoked';

/** What the front door asks of the keys: {@link ApiKeyStore}, or a holder that swaps stores on reload. */
export interface ApiKeyDirectory {
  /** The key whose secret is `secret`, if it is in force at `now` (ms since the epoch); else why not. */
  identify(secret: string, now: number): ApiKey | KeyRefusal;
}

/** A rotated-out secret that still works until `expires` (the end of its grace period). */
export interface PreviousSecret {
  readonly sha256: string;
  readonly expires: string;
  readonly last4?: string;
}

/** One entry of the keys file, as validated; fields the gateway does not know are ignored. */
export interface KeyRecord {
  readonly key: ApiKey;
  readonly sha256: string;
  readonly created?: string;
  readonly expires?: string;
  readonly revoked?: string;
  readonly last4?: string;
  readonly env?: string;
  readonly previous: readonly PreviousSecret[];
}

interface SecretEntry {
  readonly key: ApiKey;
  /** Milliseconds since the epoch; Infinity when it never expires. */
  readonly expiresAt: number;
  readonly revoked: boolean;
}

const DIGEST = /^[0-9a-f]{64}$/;
/** A date, or a date and time with a zone: what `Date.parse` reads the same everywhere. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?(?:Z|[+-]\d{2}:\d{2}))?$/;
const LAST4 = /^[A-Za-z0-9._~+/=-]{4}$/;

/**
 * The keys file, held as SHA-256 digests only: a request's secret is hashed and the digest looked
 * up, so the secrets are never stored, and the lookup time does not depend on how much of a guess
 * matched a real secret (no prefix or character-by-character compare ever touches one).
 */
export class ApiKeyStore {
  private constructor(
    private readonly bySecret: ReadonlyMap<string, SecretEntry>,
    /** The entries, in file order. */
    readonly records: readonly KeyRecord[],
    /** SHA-256 of the file text this store was read from, if it came from a file. */
    readonly fileSha256?: string,
  ) {}

  /**
   * Reads a YAML (or JSON) keys file. @throws Error with a one-line message that starts
   * `API_KEYS_FILE <path>:` and names the bad entry, or the line and column of a syntax error.
   */
  static load(path: string): ApiKeyStore {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      throw new Error(`API_KEYS_FILE ${path}: ${(error as Error).message}`, { cause: error });
    }
    return ApiKeyStore.parse(text, path);
  }

  /** {@link ApiKeyStore.load} for text already read from `path`. */
  static parse(text: string, path: string): ApiKeyStore {
    const source = `API_KEYS_FILE ${path}`;
    return ApiKeyStore.fromDocument(parseYamlText(text, source), source, sha256Hex(text));
  }

  static fromDocument(document: unknown, source = 'keys file', fileSha256?: string): ApiKeyStore {
    const entries = (document as { keys?: unknown } | null)?.keys;
    if (!Array.isArray(entries)) throw new Error(`${source}: must have a "keys" list`);
    const bySecret = new Map<string, SecretEntry>();
    const ids = new Set<string>();
    const records = entries.map((entry: unknown, index) => {
      const record = parseEntry(entry, `${source}: keys[${index}]`);
      const where = `${source}: key "${record.key.id}"`;
      if (ids.has(record.key.id)) throw new Error(`${where}: duplicate id`);
      ids.add(record.key.id);
      const key = Object.freeze(record.key);
      const revoked = record.revoked !== undefined;
      const expiresAt = record.expires === undefined ? Infinity : Date.parse(record.expires);
      for (const { sha256, expires } of [{ sha256: record.sha256, expires: undefined }, ...record.previous]) {
        if (bySecret.has(sha256)) throw new Error(`${where}: duplicate sha256`);
        bySecret.set(sha256, { key, revoked, expiresAt: expires === undefined ? expiresAt : Math.min(expiresAt, Date.parse(expires)) });
      }
      return Object.freeze({ ...record, key });
    });
    return new ApiKeyStore(bySecret, Object.freeze(records), fileSha256);
  }

  /**
   * An issued secret (`pk_…`) that fails its checksum is refused before any lookup; every other
   * secret is hashed and its digest looked up, so that near misses and far misses cost the same.
   */
  identify(secret: string, now: number): ApiKey | KeyRefusal {
    if (hasIssuedPrefix(secret) && !checksumMatches(secret)) return 'checksum';
    const entry = this.bySecret.get(sha256Hex(secret));
    if (entry === undefined) return 'unknown';
    if (entry.revoked) return 'revoked';
    if (now >= entry.expiresAt) return 'expired';
    return entry.key;
  }
}

/** One-shot `crypto.hash`: on every request's path, and cheaper than a Hash object per call. */
export function sha256Hex(text: string): string {
  return hash('sha256', text, 'hex');
}

function parseEntry(entry: unknown, where: string): KeyRecord {
  if (entry === null || typeof entry !== 'object') throw new Error(`${where}: must be a mapping`);
  const { id, sha256, plan, limits, created, expires, revoked, last4, env, previous } = entry as Record<string, unknown>;
  if (typeof id !== 'string' || !KEY_ID.test(id)) throw new Error(`${where}: id must match ${KEY_ID}`);
  const named = `${where.replace(/keys\[\d+\]$/, '')}key "${id}"`;
  if (typeof plan !== 'string' || !PLAN_NAMES.includes(plan as PlanName)) {
    throw new Error(`${named}: plan must be one of ${PLAN_NAMES.join(', ')}`);
  }
  if (plan === 'enterprise' && limits === undefined) throw new Error(`${named}: enterprise keys need limits`);
  if (env !== undefined && !KEY_ENVIRONMENTS.includes(env as never)) {
    throw new Error(`${named}: env must be one of ${KEY_ENVIRONMENTS.join(', ')}`);
  }
  const base = plan === 'enterprise' ? undefined : PLAN_LIMITS[plan as Exclude<PlanName, 'enterprise'>];
  return {
    key: { id, plan: plan as PlanName, limits: parseLimits(limits, base, named) },
    sha256: digestOf(sha256, `${named}: sha256`),
    created: timeOf(created, `${named}: created`),
    expires: timeOf(expires, `${named}: expires`),
    revoked: timeOf(revoked, `${named}: revoked`),
    last4: last4Of(last4, `${named}: last4`),
    env: env as string | undefined,
    previous: parsePrevious(previous, named),
  };
}

function parsePrevious(previous: unknown, where: string): PreviousSecret[] {
  if (previous === undefined) return [];
  if (!Array.isArray(previous)) throw new Error(`${where}: previous must be a list`);
  return previous.map((entry: unknown, index) => {
    const at = `${where}: previous[${index}]`;
    if (entry === null || typeof entry !== 'object') throw new Error(`${at}: must be a mapping`);
    const { sha256, expires, last4 } = entry as Record<string, unknown>;
    if (expires === undefined) throw new Error(`${at}: expires is required (the end of its grace period)`);
    return { sha256: digestOf(sha256, `${at}: sha256`), expires: timeOf(expires, `${at}: expires`)!, last4: last4Of(last4, `${at}: last4`) };
  });
}

function digestOf(value: unknown, where: string): string {
  if (typeof value !== 'string' || !DIGEST.test(value)) throw new Error(`${where} must be 64 lowercase hex characters`);
  return value;
}

/** Milliseconds since the epoch of an ISO 8601 date (midnight UTC) or time with a zone; NaN for anything else. */
export function parseIsoTime(text: string): number {
  return ISO_TIME.test(text) ? Date.parse(text) : NaN;
}

function timeOf(value: unknown, where: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || Number.isNaN(parseIsoTime(value))) {
    throw new Error(`${where} must be an ISO 8601 date or time, such as 2030-01-31 or 2030-01-31T12:00:00Z`);
  }
  return value;
}

function last4Of(value: unknown, where: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !LAST4.test(value)) throw new Error(`${where} must be 4 characters of a secret`);
  return value;
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
