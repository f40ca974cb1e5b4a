/**
 * The soak's clients: an open-loop mix at a fixed rate (requests are started on schedule, whatever
 * the answers' pace, as independent users send them), each answer checked against what its kind
 * of request must get and against the OpenAPI document, plus one key hammering past its 429s.
 */
import { randomUUID } from 'node:crypto';
import { expectWithinContract } from '../../system-test/support/openapi-validator';
import type { Endpoints } from '../../system-test/support/endpoints';
import { secretOf } from './stack';

export type RequestKind = 'list' | 'list-next' | 'get' | 'create' | 'replay' | 'malformed' | 'not-found' | 'keyless' | 'unknown-key' | 'hammer';

/** One answer, or its absence (status 0: no connection, a reset or a timeout). */
export interface Sample {
  readonly kind: RequestKind;
  /** Gateway index the request was sent to; -1 when none was in rotation. */
  readonly gateway: number;
  /** Start, ms since the traffic began. */
  readonly at: number;
  readonly ms: number;
  readonly status: number;
  readonly code?: string;
  /** Why the answer is not one this kind of request may get; absent when it is. */
  readonly problem?: string;
}

export interface CreatedPet {
  readonly id: string;
  readonly name: string;
  readonly categoryId: number;
  readonly status: string;
}

interface Created extends CreatedPet {
  readonly keyId: string;
  readonly idempotencyKey: string;
  readonly body: string;
}

export interface TrafficOptions {
  readonly gatewayUrls: readonly string[];
  readonly endpoints: Endpoints;
  /** Requests per second of the mix, across both gateways. */
  readonly rate: number;
  /** Requests per second of the hammering key. */
  readonly hammerRate: number;
  /**
   * Creates per second, apart from the mix (and 0.4 replays per create). Few: on FerretDB every
   * read scans the whole collection (docs/mongodb.md), so what the stack sustains falls as the
   * collection grows, and a run at a steady rate must keep it within what FerretDB serves.
   */
  readonly createRate: number;
  /** Keys with limits far above the rate. */
  readonly loadKeys: readonly string[];
  /** A free key, whose 429s it ignores until it is banned. */
  readonly hammerKey: string;
}

/** Share of each kind in the mix; `list-next` is a `list` that follows a `Link` it was given. */
const MIX: ReadonlyArray<readonly [RequestKind, number]> = [
  ['list', 0.44],
  ['get', 0.25],
  ['malformed', 0.115],
  ['not-found', 0.055],
  ['keyless', 0.07],
  ['unknown-key', 0.07],
];
/** Replays of earlier creates, per create. */
const REPLAYS_PER_CREATE = 0.4;
const STATUSES = ['available', 'pending', 'sold'] as const;
/** Requests in flight beyond which the schedule is not kept (counted as `behind`, a sign of overload). */
const MAX_IN_FLIGHT = 512;
const REQUEST_TIMEOUT_MS = 10_000;
const TICK_MS = 10;

/** Malformed requests, each refused with 400 `invalid_request` whatever the state. */
const MALFORMED: ReadonlyArray<{ readonly method: 'GET' | 'POST'; readonly path: string; readonly body?: string }> = [
  { method: 'POST', path: '/v1/pets', body: '{"name":' },
  { method: 'POST', path: '/v1/pets', body: '{"name":"","categoryId":1}' },
  { method: 'POST', path: '/v1/pets', body: '{"name":"x","categoryId":-1}' },
  { method: 'POST', path: '/v1/pets', body: '{"name":"x","categoryId":1,"status":"lost"}' },
  { method: 'POST', path: '/v1/pets', body: '[1,2,3]' },
  { method: 'GET', path: '/v1/pets?limit=0' },
  { method: 'GET', path: '/v1/pets?limit=101' },
  { method: 'GET', path: '/v1/pets?limit=abc' },
  { method: 'GET', path: '/v1/pets?status=lost' },
  { method: 'GET', path: '/v1/pets?cursor=not-a-cursor' },
  { method: 'GET', path: '/v1/pets/abc' },
  { method: 'GET', path: '/v1/pets/0' },
];

export class SoakTraffic {
  readonly samples: Sample[] = [];
  /** Creates the gateway acknowledged with 201, by id. */
  readonly created = new Map<string, Created>();
  /** Requests the schedule could not start because too many were in flight. */
  behind = 0;
  private readonly options: TrafficOptions;
  private readonly started = performance.now();
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private readonly nextLinks: Array<{ readonly keyId: string; readonly path: string }> = [];
  private readonly createdIds: string[] = [];
  /** The id each acknowledged create's Idempotency-Key was answered with. */
  private readonly idsByIdempotencyKey = new Map<string, string>();
  private sequence = 0;
  private launched = 0;
  private hammered = 0;
  private creates = 0;
  private replays = 0;

  constructor(options: TrafficOptions) {
    this.options = options;
    this.timers.push(setInterval(() => this.tick(), TICK_MS));
  }

  /** Milliseconds since the traffic began. */
  elapsed(): number {
    return performance.now() - this.started;
  }

  /** Stops starting requests and resolves once every one in flight has its answer. */
  async stop(): Promise<void> {
    for (const timer of this.timers) clearInterval(timer);
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  private tick(): void {
    const seconds = this.elapsed() / 1000;
    while (this.launched < Math.floor(seconds * this.options.rate)) {
      this.launched += 1;
      this.launch(() => this.mixed());
    }
    while (this.hammered < Math.floor(seconds * this.options.hammerRate)) {
      this.hammered += 1;
      this.launch(() => this.send('hammer', this.options.hammerKey, 'GET', '/v1/pets?limit=1'));
    }
    while (this.creates < Math.floor(seconds * this.options.createRate)) {
      this.creates += 1;
      this.launch(() => this.create());
    }
    while (this.replays < Math.floor(seconds * this.options.createRate * REPLAYS_PER_CREATE)) {
      this.replays += 1;
      this.launch(() => this.replay());
    }
  }

  private launch(request: () => Promise<void>): void {
    if (this.inFlight.size >= MAX_IN_FLIGHT) {
      this.behind += 1;
      return;
    }
    const pending = request().finally(() => this.inFlight.delete(pending));
    this.inFlight.add(pending);
  }

  private mixed(): Promise<void> {
    const keyId = this.options.loadKeys[this.sequence % this.options.loadKeys.length]!;
    switch (pick(MIX)) {
      case 'list': {
        const next = this.nextLinks.length > 0 && Math.random() < 0.5 ? this.nextLinks.shift() : undefined;
        if (next !== undefined) return this.send('list-next', next.keyId, 'GET', next.path);
        const status = Math.random() < 0.5 ? `&status=${STATUSES[Math.floor(Math.random() * 3)]}` : '';
        return this.send('list', keyId, 'GET', `/v1/pets?limit=${1 + Math.floor(Math.random() * 100)}${status}`);
      }
      case 'get': {
        const id = this.createdIds[Math.floor(Math.random() * this.createdIds.length)];
        if (id === undefined) return this.send('not-found', keyId, 'GET', '/v1/pets/9000000000000000000');
        return this.send('get', keyId, 'GET', `/v1/pets/${id}`);
      }
      case 'malformed': {
        const request = MALFORMED[Math.floor(Math.random() * MALFORMED.length)]!;
        return this.send('malformed', keyId, request.method, request.path, request.body);
      }
      case 'not-found':
        return this.send('not-found', keyId, 'GET', `/v1/pets/${8_000_000_000_000_000_000n + BigInt(this.sequence++)}`);
      case 'keyless':
        return this.send('keyless', undefined, 'GET', '/v1/pets?limit=5');
      default:
        return this.send('unknown-key', 'no-such-key', 'GET', '/v1/pets?limit=5');
    }
  }

  private create(): Promise<void> {
    const keyId = this.options.loadKeys[this.sequence % this.options.loadKeys.length]!;
    const pet = { name: `soak ${this.sequence++}`, categoryId: 1 + Math.floor(Math.random() * 1e9), status: STATUSES[Math.floor(Math.random() * 3)]! };
    return this.send('create', keyId, 'POST', '/v1/pets', JSON.stringify(pet), randomUUID());
  }

  /** The same create again, same key and body, as a client retrying it would send it. */
  private replay(): Promise<void> {
    const id = this.createdIds[Math.floor(Math.random() * this.createdIds.length)];
    const original = id === undefined ? undefined : this.created.get(id);
    if (original === undefined) return this.create();
    return this.send('replay', original.keyId, 'POST', '/v1/pets', original.body, original.idempotencyKey);
  }

  /** Sends one request to the next gateway in rotation and records its sample. */
  private async send(kind: RequestKind, keyId: string | undefined, method: 'GET' | 'POST', path: string, body?: string, idempotencyKey?: string): Promise<void> {
    const at = this.elapsed();
    const rotation = this.options.endpoints.ready();
    if (rotation.length === 0) {
      this.samples.push({ kind, gateway: -1, at, ms: 0, status: 0, problem: 'no gateway in rotation' });
      return;
    }
    const gateway = rotation[this.sequence++ % rotation.length]!;
    const url = `${this.options.gatewayUrls[gateway]}${path}`;
    const headers: Record<string, string> = {};
    if (keyId !== undefined) headers.Authorization = `Bearer ${secretOf(keyId)}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (idempotencyKey !== undefined) headers['Idempotency-Key'] = idempotencyKey;
    let status = 0;
    let code: string | undefined;
    let problem: string | undefined;
    try {
      const response = await fetch(url, { method, headers, body, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
      const text = await response.text();
      status = response.status;
      const parsed = expectWithinContract(method, url, { status, headers: response.headers, text }) as unknown;
      code = status >= 400 ? (parsed as { code?: string }).code : undefined;
      problem = this.check(kind, status, code, response.headers, parsed, keyId, body, idempotencyKey);
    } catch (error) {
      problem = `${(error as Error).message}${(error as Error).cause === undefined ? '' : ` (${String((error as Error).cause)})`}`;
    }
    this.samples.push({ kind, gateway, at, ms: this.elapsed() - at, status, code, problem });
  }

  /** Why the answer is not one `kind` may get, or undefined; records creates and their replays. */
  private check(
    kind: RequestKind,
    status: number,
    code: string | undefined,
    headers: Headers,
    parsed: unknown,
    keyId: string | undefined,
    body: string | undefined,
    idempotencyKey: string | undefined,
  ): string | undefined {
    const expected = (allowed: readonly string[]): string | undefined =>
      allowed.includes(`${status}`) || allowed.includes(`${status} ${code}`) ? undefined : `unexpected ${status}${code === undefined ? '' : ` ${code}`}`;
    switch (kind) {
      case 'list':
      case 'list-next': {
        const problem = expected(['200']);
        const link = headers.get('link');
        const next = link === null ? undefined : /<([^>]+)>;\s*rel="next"/.exec(link)?.[1];
        if (problem === undefined && next !== undefined && this.nextLinks.length < 1000) this.nextLinks.push({ keyId: keyId!, path: new URL(next, 'http://gateway').pathname + new URL(next, 'http://gateway').search });
        return problem;
      }
      case 'get': {
        const problem = expected(['200']);
        if (problem !== undefined) return problem;
        const pet = parsed as { id: number; name: string; categoryId: number; status: string };
        const created = this.created.get(String(pet.id));
        if (created === undefined || !samePet(created, pet)) return `GET /v1/pets/${pet.id} answered ${JSON.stringify(pet)}, not what was created`;
        return undefined;
      }
      case 'create': {
        const problem = expected(['201']);
        if (problem !== undefined) return problem;
        const pet = parsed as { id: number; name: string; categoryId: number; status: string };
        const id = String(pet.id);
        this.created.set(id, { id, name: pet.name, categoryId: pet.categoryId, status: pet.status, keyId: keyId!, body: body!, idempotencyKey: idempotencyKey! });
        this.createdIds.push(id);
        this.idsByIdempotencyKey.set(idempotencyKey!, id);
        return undefined;
      }
      case 'replay': {
        const problem = expected(['201']);
        if (problem !== undefined) return problem;
        const pet = parsed as { id: number };
        const originalId = this.idsByIdempotencyKey.get(idempotencyKey!);
        if (headers.get('idempotent-replayed') !== 'true') return 'a replay without Idempotent-Replayed: true';
        if (originalId !== String(pet.id)) return `a replay answered id ${pet.id}, not ${originalId}`;
        return undefined;
      }
      case 'malformed':
        return expected(['400 invalid_request']);
      case 'not-found':
        return expected(['404 not_found']);
      case 'keyless':
      case 'unknown-key':
        // Requests without a valid key share the client address's bucket, which the mix exceeds.
        return expected(['401 unauthorized', '429 rate_limited']);
      case 'hammer':
        return expected(['200', '429 rate_limited', '429 api_key_banned']);
    }
  }
}

/** Whether an answered pet is the one created: the same name, category and status. */
export function samePet(created: CreatedPet, pet: { name: string; categoryId: number; status: string }): boolean {
  return created.name === pet.name && created.categoryId === pet.categoryId && created.status === pet.status;
}

function pick(mix: ReadonlyArray<readonly [RequestKind, number]>): RequestKind {
  let roll = Math.random();
  for (const [kind, share] of mix) {
    roll -= share;
    if (roll < 0) return kind;
  }
  return mix.at(-1)![0];
}
