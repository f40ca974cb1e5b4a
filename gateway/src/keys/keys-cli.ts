import { parseArgs, type ParseArgsConfig } from 'node:util';
import { type Document, isMap, isSeq, type YAMLMap, type YAMLSeq } from 'yaml';
import { KEY_ID } from '../config';
import { type ApiKey, ApiKeyStore, type KeyRecord, parseIsoTime, sha256Hex } from './api-keys';
import type { UsageReport, WindowUsageReport } from './key-usage';
import { PLAN_NAMES, type PlanName } from '../rate-limit/plans';
import { generateSecret, KEY_ENVIRONMENTS, type KeyEnvironment, lastFour } from './api-key-secret';
import { editKeysFile, RejectedEditError } from './keys-file-editor';

/** What the keys CLI works with; `keys-main.ts` wires it to the process. */
export interface KeysCliContext {
  /** `API_KEYS_FILE`, if set. */
  readonly keysFile: string | undefined;
  /** Lifts a temporary ban in the configured rate-limit store; resolves with the exit code. */
  readonly unban: (keyId: string) => Promise<number>;
  /**
   * Reads what `keys` have used from the shared rate-limit store, in their order. Rejects with a
   * one-line reason when there is no shared store to read, or it cannot be reached.
   */
  readonly readUsage: (keys: readonly ApiKey[]) => Promise<UsageReport>;
  /** A line for standard output (results: a secret, the list) and for standard error (the rest). */
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
  /** Milliseconds since the epoch. */
  readonly now: () => number;
}

/** Exit codes: 0 done, 1 could not be done (file, lock, store), 2 bad arguments. */
const USAGE = 2;

/** A bad argument: the message is shown with the command's usage, and the exit code is 2. */
class UsageError extends Error {}

type Values = Record<string, string | boolean | undefined>;

interface Command {
  readonly usage: string;
  readonly summary: string;
  readonly options: NonNullable<ParseArgsConfig['options']>;
  run(values: Values, context: KeysCliContext): Promise<number>;
}

const DEFAULT_GRACE = '24h';
const DURATION = /^(\d+)([smhd])$/;
const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

const COMMANDS: Readonly<Record<string, Command>> = {
  create: {
    usage: 'create --id <id> --plan <plan> [--per-minute N --per-day N] [--expires <ISO date>] [--env live|test]',
    summary: 'Issue a key. Prints its secret, once; the file keeps only its SHA-256.',
    options: {
      id: { type: 'string' },
      plan: { type: 'string' },
      'per-minute': { type: 'string' },
      'per-day': { type: 'string' },
      expires: { type: 'string' },
      env: { type: 'string' },
    },
    run: create,
  },
  list: {
    usage: 'list [--json]',
    summary: 'Show every key: id, plan, limits, created, expires, revoked, status, last 4 characters. Never a secret.',
    options: { json: { type: 'boolean' } },
    run: list,
  },
  revoke: {
    usage: 'revoke --id <id>',
    summary: 'Stop a key, and every secret it has, from working.',
    options: { id: { type: 'string' } },
    run: revoke,
  },
  rotate: {
    usage: `rotate --id <id> [--grace <duration>] [--env live|test]`,
    summary: `Issue a new secret for a key (same id, plan and budget). The old one works for the grace period (default ${DEFAULT_GRACE}; 90s, 30m, 12h, 7d; 0s ends it now).`,
    options: { id: { type: 'string' }, grace: { type: 'string' }, env: { type: 'string' } },
    run: rotate,
  },
  unban: {
    usage: 'unban --id <id>',
    summary: 'Lift a temporary ban on a key in the shared Redis store (REDIS_URL).',
    options: { id: { type: 'string' } },
    run: async (values, context) => context.unban(required(values, 'id')),
  },
  usage: {
    usage: 'usage [--id <id>] [--json]',
    summary:
      'Show what each key (or one) has used: plan, requests counted in the current UTC minute and day, what remains, when each resets, and any ban and its end, from the shared Redis store.',
    options: { id: { type: 'string' }, json: { type: 'boolean' } },
    run: usage,
  },
};

const OVERVIEW = [
  'usage: npm run keys -- <command> [options]; npm run keys -- <command> --help',
  '',
  ...Object.values(COMMANDS).map((command) => `  ${command.usage}\n      ${command.summary}`),
  '',
  'Works on the keys file API_KEYS_FILE. Exit codes: 0 done, 1 failed, 2 bad arguments.',
].join('\n');

/** Runs `npm run keys -- <argv>`; resolves with the exit code. */
export async function runKeysCli(argv: readonly string[], context: KeysCliContext): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--help' || name === '-h' || name === 'help') {
    context.out(OVERVIEW);
    return 0;
  }
  const command = name === undefined ? undefined : COMMANDS[name];
  if (command === undefined) {
    context.err(name === undefined ? 'keys: a command is needed' : `keys: unknown command "${name}"`);
    context.err(OVERVIEW);
    return USAGE;
  }
  const usage = `usage: npm run keys -- ${command.usage}\n  ${command.summary}`;
  let values: Values;
  try {
    values = parseArgs({ args: [...rest], options: { ...command.options, help: { type: 'boolean', short: 'h' } }, strict: true }).values;
  } catch (error) {
    context.err(`keys ${name}: ${(error as Error).message}\n${usage}`);
    return USAGE;
  }
  if (values.help === true) {
    context.out(usage);
    return 0;
  }
  try {
    return await command.run(values, context);
  } catch (error) {
    if (error instanceof UsageError || error instanceof RejectedEditError) {
      context.err(`keys ${name}: ${error.message}\n${usage}`);
      return USAGE;
    }
    context.err(`keys ${name}: ${(error as Error).message}`);
    return 1;
  }
}

async function create(values: Values, context: KeysCliContext): Promise<number> {
  const id = keyId(values);
  const plan = required(values, 'plan') as PlanName;
  if (!PLAN_NAMES.includes(plan)) throw new UsageError(`--plan must be one of ${PLAN_NAMES.join(', ')}`);
  const perMinute = positiveInteger(values, 'per-minute');
  const perDay = positiveInteger(values, 'per-day');
  if (plan === 'enterprise' && (perMinute === undefined || perDay === undefined)) {
    throw new UsageError('--plan enterprise needs --per-minute and --per-day');
  }
  const now = context.now();
  const expires = values.expires === undefined ? undefined : futureTime(values.expires as string, now);
  const env = environment(values, 'live');
  const secret = generateSecret(env);
  await editKeysFile(keysFile(context), (document, store) => {
    if (store.records.some((known) => known.key.id === id)) throw new UsageError(`key "${id}" already exists; rotate it, or choose another id`);
    const keys = document.get('keys') as YAMLSeq;
    keys.flow = false;
    keys.add(
      document.createNode({
        id,
        sha256: sha256Hex(secret),
        plan,
        ...(perMinute === undefined && perDay === undefined ? {} : { limits: { perMinute, perDay } }),
        env,
        last4: lastFour(secret),
        created: new Date(now).toISOString(),
        ...(expires === undefined ? {} : { expires }),
      }),
    );
  });
  context.out(secret);
  context.err(
    `created key ${id} (plan ${plan}, ${expires === undefined ? 'no expiry' : `expires ${expires}`}).\n` +
      'The secret above is shown this once; the keys file holds only its SHA-256. Gateways accept it within seconds.',
  );
  return 0;
}

async function list(values: Values, context: KeysCliContext): Promise<number> {
  const now = context.now();
  const rows = ApiKeyStore.load(keysFile(context)).records.map((record) => ({
    id: record.key.id,
    plan: record.key.plan,
    limits: record.key.limits,
    created: record.created ?? null,
    expires: record.expires ?? null,
    revoked: record.revoked ?? null,
    status: statusOf(record, now),
    last4: record.last4 ?? null,
    previous: record.previous.map(({ last4, expires }) => ({ last4: last4 ?? null, expires })),
  }));
  if (values.json === true) {
    context.out(JSON.stringify(rows, null, 2));
    return 0;
  }
  const table = [
    ['ID', 'PLAN', 'PER MINUTE', 'PER DAY', 'CREATED', 'EXPIRES', 'REVOKED', 'STATUS', 'LAST 4', 'OLD SECRETS (LAST 4 UNTIL)'],
    ...rows.map((row) => [
      row.id,
      row.plan,
      String(row.limits.perMinute),
      String(row.limits.perDay),
      row.created ?? '-',
      row.expires ?? '-',
      row.revoked ?? '-',
      row.status,
      row.last4 ?? '-',
      row.previous.map((old) => `${old.last4 ?? '?'} ${old.expires}`).join(', ') || '-',
    ]),
  ];
  printTable(table, context);
  return 0;
}

async function usage(values: Values, context: KeysCliContext): Promise<number> {
  const store = ApiKeyStore.load(keysFile(context));
  const records = values.id === undefined ? store.records : [recordOf(store, keyId(values), context)];
  const report = await context.readUsage(records.map((record) => record.key));
  if (values.json === true) {
    context.out(JSON.stringify(report, null, 2));
    return 0;
  }
  const window = (usage: WindowUsageReport) => [`${usage.used}/${usage.limit}`, String(usage.remaining), usage.resetsAt];
  const table = [
    ['ID', 'PLAN', 'MINUTE USED', 'LEFT', 'MINUTE RESETS', 'DAY USED', 'LEFT', 'DAY RESETS', 'BANNED UNTIL'],
    ...report.keys.map((key) => [key.id, key.plan, ...window(key.minute), ...window(key.day), key.bannedUntil ?? '-']),
  ];
  printTable(table, context);
  context.err(`read at ${report.at} from the ${report.scope === 'shared' ? 'shared counters every gateway spends' : 'counters of one replica only'}`);
  return 0;
}

async function revoke(values: Values, context: KeysCliContext): Promise<number> {
  const id = keyId(values);
  const revokedAt = new Date(context.now()).toISOString();
  const earlier = await editKeysFile(keysFile(context), (document, store) => {
    const record = recordOf(store, id, context);
    if (record.revoked === undefined) entryOf(document, id).set('revoked', revokedAt);
    return record.revoked;
  });
  context.err(
    earlier === undefined
      ? `revoked key ${id}: gateways refuse its secrets within seconds`
      : `key ${id} was already revoked, at ${earlier}`,
  );
  return 0;
}

async function rotate(values: Values, context: KeysCliContext): Promise<number> {
  const id = keyId(values);
  const graceMs = duration((values.grace as string | undefined) ?? DEFAULT_GRACE);
  const now = context.now();
  let secret = '';
  const graceEnd = await editKeysFile(keysFile(context), (document, store) => {
    const record = recordOf(store, id, context);
    if (record.revoked !== undefined) throw new UsageError(`key "${id}" is revoked; create a new key instead`);
    const keyExpiry = record.expires === undefined ? Infinity : Date.parse(record.expires);
    if (keyExpiry <= now) throw new UsageError(`key "${id}" expired at ${record.expires}; create a new key instead`);
    secret = generateSecret(environment(values, (record.env as KeyEnvironment | undefined) ?? 'live'));
    const entry = entryOf(document, id);
    const endsAt = Math.min(now + graceMs, keyExpiry);
    // Rotated-out secrets whose grace is over are dropped; the one replaced now joins them if it has any.
    const stillValid = (entry.get('previous') as YAMLSeq | undefined)?.items.filter(
      (old) => isMap(old) && Date.parse(String(old.get('expires'))) > now,
    ) ?? [];
    if (endsAt > now) {
      stillValid.push(
        document.createNode({
          sha256: record.sha256,
          expires: new Date(endsAt).toISOString(),
          ...(record.last4 === undefined ? {} : { last4: record.last4 }),
        }),
      );
    }
    entry.set('sha256', sha256Hex(secret));
    entry.set('last4', lastFour(secret));
    if (stillValid.length === 0) entry.delete('previous');
    else {
      const previous = document.createNode([]) as YAMLSeq;
      previous.items = stillValid;
      entry.set('previous', previous);
    }
    return endsAt;
  });
  context.out(secret);
  context.err(
    `rotated key ${id}: the secret above is shown this once; ` +
      (graceEnd > now ? `the previous secret works until ${new Date(graceEnd).toISOString()}` : 'the previous secret no longer works'),
  );
  return 0;
}

/** Rows of cells in columns as wide as their widest cell, the first row being the headings. */
function printTable(table: readonly (readonly string[])[], context: KeysCliContext): void {
  const widths = table[0]!.map((_, column) => Math.max(...table.map((cells) => cells[column]!.length)));
  for (const cells of table) context.out(cells.map((cell, column) => cell.padEnd(widths[column]!)).join('  ').trimEnd());
}

function statusOf(record: KeyRecord, now: number): 'active' | 'expired' | 'revoked' {
  if (record.revoked !== undefined) return 'revoked';
  return record.expires !== undefined && Date.parse(record.expires) <= now ? 'expired' : 'active';
}

function keysFile(context: KeysCliContext): string {
  if (context.keysFile === undefined) throw new Error('API_KEYS_FILE is not set: point it at the keys file the gateways read');
  return context.keysFile;
}

function recordOf(store: ApiKeyStore, id: string, context: KeysCliContext): KeyRecord {
  const record = store.records.find((known) => known.key.id === id);
  if (record === undefined) throw new UsageError(`no key "${id}" in ${context.keysFile}`);
  return record;
}

function entryOf(document: Document, id: string): YAMLMap {
  const keys = document.get('keys');
  const entry = isSeq(keys) ? keys.items.find((item) => isMap(item) && item.get('id') === id) : undefined;
  return entry as YAMLMap;
}

function required(values: Values, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

function keyId(values: Values): string {
  const id = required(values, 'id');
  if (!KEY_ID.test(id)) throw new UsageError(`--id must be 1 to 64 letters, digits, dots, dashes or underscores`);
  return id;
}

function positiveInteger(values: Values, name: string): number | undefined {
  const value = values[name] as string | undefined;
  if (value === undefined) return undefined;
  if (!/^[1-9][0-9]*$/.test(value) || !Number.isSafeInteger(Number(value))) throw new UsageError(`--${name} must be a positive integer`);
  return Number(value);
}

function environment(values: Values, fallback: KeyEnvironment): KeyEnvironment {
  const env = (values.env as string | undefined) ?? fallback;
  if (!KEY_ENVIRONMENTS.includes(env as KeyEnvironment)) throw new UsageError(`--env must be one of ${KEY_ENVIRONMENTS.join(', ')}`);
  return env as KeyEnvironment;
}

function futureTime(text: string, now: number): string {
  const at = parseIsoTime(text);
  if (Number.isNaN(at)) throw new UsageError('--expires must be an ISO 8601 date or time, such as 2030-01-31 or 2030-01-31T12:00:00Z');
  if (at <= now) throw new UsageError(`--expires must be in the future (${text} is not)`);
  return new Date(at).toISOString();
}

function duration(text: string): number {
  const match = DURATION.exec(text);
  if (match === null) throw new UsageError(`--grace must be a number and a unit, s, m, h or d (such as 90s, 30m, 12h, 7d); "${text}" is not`);
  return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
}
