import LinkHeader from 'http-link-header';
import { decodeErrorBody, decodePet, encodeNewPet, isPositiveInt64Text, parseLosslessly } from './json-codec';
import { PetstoreError } from './petstore-error';
import { RateLimitGate, type RateLimitSnapshot } from './rate-limit-gate';
import { DEFAULT_RETRY_OPTIONS, parseRetryAfterMs, retryDelayMs, type RetryOptions } from './retry-policy';
import { realSleep, type Sleep } from './sleep';
import type { Int64, Int64Mode, ListPetsQuery, NewPet, Pet, PetChange, TaggedPet } from './types';

export interface PetstoreClientOptions<Mode extends Int64Mode> {
  /** Where the gateway is, e.g. `https://pets.example.com`; the client adds `/v1/...`. */
  readonly baseUrl: string | URL;
  /** The API key, sent as `Authorization: Bearer <key>`. */
  readonly apiKey: string;
  /** How ids and category ids come back: `bigint` (default) or `string` (plain decimal). */
  readonly int64?: Mode;
  /** Default timeout of a call (for listPets, of each page), retries and waits included, in ms. Default 90,000. */
  readonly timeoutMs?: number;
  readonly retry?: Partial<RetryOptions>;
  /** Hold requests back so that the key never gets a 429 from this client alone. Default false. */
  readonly pace?: boolean;
  /** For tests and special transports: default the global `fetch`. */
  readonly fetch?: typeof fetch;
  /** Clock, ms since the epoch: default `Date.now`. */
  readonly now?: () => number;
  /** Waits between retries and while pacing: default a timer. */
  readonly sleep?: Sleep;
  /** Source of jitter in [0, 1): default `Math.random`. */
  readonly random?: () => number;
}

export interface CallOptions {
  /** Cancels the call, retries and waits included. */
  readonly signal?: AbortSignal;
  /** This call's timeout in ms (retries and waits included; for listPets, each page's); default the client's. */
  readonly timeoutMs?: number;
  /** Sent as `X-Request-Id`; default a fresh UUID per call, the same on its retries. */
  readonly requestId?: string;
}

export interface CreatePetOptions extends CallOptions {
  /** Default a fresh UUID per call, the same on its retries, so a retry never creates twice. */
  readonly idempotencyKey?: string;
}

export interface UpdatePetOptions extends CallOptions {
  /**
   * The pet's entity tag as you last saw it (`TaggedPet.etag`): the change applies only if the pet
   * is still that version, else the call fails with `precondition_failed` and the current tag in
   * `currentEtag`. Without it the change applies to the pet as it is (last write wins).
   */
  readonly ifMatch?: string;
  /** Default a fresh UUID per call, the same on its retries, so a retry never changes twice. */
  readonly idempotencyKey?: string;
}

export interface DeletePetOptions extends CallOptions {
  /** As {@link UpdatePetOptions.ifMatch}: delete only the version of the pet you saw. */
  readonly ifMatch?: string;
}

export interface PetstoreClient<Mode extends Int64Mode> {
  /** Every pet matching `query`, page after page, following `Link: rel="next"` (limit and filter kept). */
  listPets(query?: ListPetsQuery, options?: CallOptions): AsyncIterableIterator<Pet<Mode>>;
  /** Creates a pet; safe to retry (it is, by the client, on a lost answer). */
  createPet(pet: NewPet, options?: CreatePetOptions): Promise<Pet<Mode>>;
  /**
   * Changes the fields of `change` (PATCH, a JSON Merge Patch) and answers the pet with its new
   * entity tag; safe to retry (it is, by the client, with its idempotency key). Fails with a
   * {@link PetstoreError} whose `code` says why: `not_found`, `invalid_transition` (a change of
   * status the table refuses), `precondition_failed` (`ifMatch` is stale; `currentEtag`),
   * `conflict` (the idempotency key was used for another change), `invalid_request`.
   */
  updatePet(id: Int64<Mode> | bigint | string, change: PetChange, options?: UpdatePetOptions): Promise<TaggedPet<Mode>>;
  /**
   * Deletes the pet (DELETE). Fails with `not_found` or `precondition_failed` (`ifMatch` is stale;
   * `currentEtag`). A retry after a lost answer or a 5xx that finds the pet gone counts as the delete.
   */
  deletePet(id: Int64<Mode> | bigint | string, options?: DeletePetOptions): Promise<void>;
  /** The `X-RateLimit-*` fields of the last response that carried them. */
  readonly rateLimit: RateLimitSnapshot | undefined;
}

interface Attempt {
  readonly method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  readonly url: URL;
  readonly requestId: string;
  readonly headers: Record<string, string>;
  readonly body?: string;
  /** A DELETE: a 404 to a retry after an attempt that may have been carried out (no answer, a 5xx) means that attempt deleted it. */
  readonly goneAfterLostAnswerIsDone?: boolean;
}

/** Statuses worth another try: the gateway or what is behind it failed, not the request. */
const RETRIED_STATUSES: ReadonlySet<number> = new Set([502, 503, 504]);

/**
 * A client for the gateway's `/v1` API, for Node 20+ and browsers (global `fetch`, no Node
 * modules). Every operation of the API is idempotent as the client sends it (reads, creates and
 * changes with an `Idempotency-Key`, deletes whose retry reads a 404 after a lost answer as done),
 * so it retries them all: on a 429 `rate_limited` after `Retry-After`
 * plus jittered backoff, on a 502/503/504 or a lost connection after jittered backoff (and after
 * `Retry-After` first when the answer has one: a 503 for a request the service shed), within
 * `retry.budgetMs`. A 429 `api_key_banned` is never retried.
 */
export function createPetstoreClient<Mode extends Int64Mode = 'bigint'>(options: PetstoreClientOptions<Mode>): PetstoreClient<Mode> {
  const mode = (options.int64 ?? 'bigint') as Mode;
  const fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? realSleep;
  const random = options.random ?? Math.random;
  const retry: RetryOptions = { ...DEFAULT_RETRY_OPTIONS, ...options.retry };
  const defaultTimeoutMs = options.timeoutMs ?? 90_000;
  const gate = new RateLimitGate(options.pace ?? false, now, sleep);
  const base = new URL(options.baseUrl);
  const petsUrl = new URL('v1/pets', base.href.endsWith('/') ? base : `${base.href}/`);

  /** One call: attempts until a success, an error not worth retrying, or the budget's end. */
  async function call(attempt: Attempt, callOptions: CallOptions): Promise<{ response: Response; body: unknown }> {
    const timeoutMs = callOptions.timeoutMs ?? defaultTimeoutMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = callOptions.signal === undefined ? timeout : AbortSignal.any([callOptions.signal, timeout]);
    // A wait that would end past the budget or the timeout is not started: the call fails at once.
    const giveUpAt = now() + Math.min(retry.budgetMs, timeoutMs);
    let answerLost = false;
    for (let retries = 0; ; retries += 1) {
      const ticket = await gate.acquire(signal);
      let response: Response | undefined;
      let failure: PetstoreError;
      try {
        response = await fetchImpl(attempt.url, { method: attempt.method, headers: attempt.headers, body: attempt.body, signal });
        const text = await response.text();
        const body = text === '' ? undefined : parseOrUndefined(text);
        if (response.ok) return { response, body };
        if (response.status === 404 && answerLost && attempt.goneAfterLostAnswerIsDone === true) return { response, body };
        failure = errorFrom(response, body, attempt.requestId);
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        failure = new PetstoreError({
          code: 'network_error',
          message: `no answer from ${attempt.url.origin}: ${error instanceof Error ? error.message : String(error)}`,
          status: 0,
          requestId: attempt.requestId,
          cause: error,
        });
      } finally {
        gate.release(ticket, response?.headers);
      }
      if (failure.code !== 'rate_limited' && failure.code !== 'network_error' && !RETRIED_STATUSES.has(failure.status)) throw failure;
      // No answer, or a 5xx: the request may have been carried out. A 503 is one too: the gateway
      // answers it when the pet service's connection drops after the call was sent (UNAVAILABLE).
      if (failure.code !== 'rate_limited') answerLost = true;
      // `Retry-After` is a floor: when a 429's window opens, or how long a 503 for a request the
      // service shed asks for. Only a 429 holds back the client's other calls (bans count 429s).
      const floorMs = failure.retryAfterMs ?? 0;
      if (failure.code === 'rate_limited') gate.blockUntil(now() + floorMs);
      const delay = retryDelayMs(retry, retries, random, floorMs);
      if (now() + delay > giveUpAt) throw failure;
      await sleep(delay, signal);
    }
  }

  function errorFrom(response: Response, body: unknown, requestId: string): PetstoreError {
    const error = decodeErrorBody(body);
    const retryAfterMs = parseRetryAfterMs(response.headers.get('retry-after'), now());
    const fields = { status: response.status, requestId: response.headers.get('x-request-id') ?? requestId, retryAfterMs };
    if (error === undefined) {
      return new PetstoreError({ ...fields, code: 'unexpected_response', message: `HTTP ${response.status} without the Error body` });
    }
    let bannedUntil: Date | undefined;
    if (error.code === 'api_key_banned') {
      const reset = response.headers.get('x-ratelimit-reset');
      const fallback = retryAfterMs === undefined ? undefined : now() + retryAfterMs;
      const end = reset !== null && /^\d+$/.test(reset) ? Number(reset) * 1000 : fallback;
      bannedUntil = end === undefined ? undefined : new Date(end);
    }
    const currentEtag = error.code === 'precondition_failed' ? (response.headers.get('etag') ?? undefined) : undefined;
    return new PetstoreError({ ...fields, code: error.code as PetstoreError['code'], message: error.message, bannedUntil, currentEtag });
  }

  function headersFor(requestId: string): Record<string, string> {
    return { Accept: 'application/json', Authorization: `Bearer ${options.apiKey}`, 'X-Request-Id': requestId };
  }

  function unexpected(message: string, response: Response, requestId: string): PetstoreError {
    return new PetstoreError({
      code: 'unexpected_response',
      message,
      status: response.status,
      requestId: response.headers.get('x-request-id') ?? requestId,
    });
  }

  async function* listPets(query: ListPetsQuery = {}, callOptions: CallOptions = {}): AsyncIterableIterator<Pet<Mode>> {
    let url: URL | undefined = new URL(petsUrl);
    if (query.limit !== undefined) url.searchParams.set('limit', String(query.limit));
    if (query.status !== undefined) url.searchParams.set('status', query.status);
    const requestId = callOptions.requestId ?? globalThis.crypto.randomUUID();
    const headers = headersFor(requestId);
    while (url !== undefined) {
      const { response, body } = await call({ method: 'GET', url, requestId, headers }, callOptions);
      if (!Array.isArray(body)) throw unexpected('the list is not a JSON array', response, requestId);
      const pets = body.map((item) => decodePet(item, mode));
      if (pets.some((pet) => pet === undefined)) throw unexpected('the list holds something that is not a Pet', response, requestId);
      yield* pets as Pet<Mode>[];
      url = nextPage(response, url, requestId);
    }
  }

  function nextPage(response: Response, current: URL, requestId: string): URL | undefined {
    const link = response.headers.get('link');
    if (link === null) return undefined;
    const [next] = LinkHeader.parse(link).rel('next');
    if (next === undefined) return undefined;
    const url = new URL(next.uri, current);
    // The API key goes with every request: never to a host the caller did not name.
    if (url.origin !== petsUrl.origin) throw unexpected(`Link rel="next" points to another origin: ${url.origin}`, response, requestId);
    return url;
  }

  async function createPet(pet: NewPet, callOptions: CreatePetOptions = {}): Promise<Pet<Mode>> {
    const requestId = callOptions.requestId ?? globalThis.crypto.randomUUID();
    const headers = {
      ...headersFor(requestId),
      'Content-Type': 'application/json',
      'Idempotency-Key': callOptions.idempotencyKey ?? globalThis.crypto.randomUUID(),
    };
    const { response, body } = await call({ method: 'POST', url: petsUrl, requestId, headers, body: encodeNewPet(pet) }, callOptions);
    const created = decodePet(body, mode);
    if (created === undefined) throw unexpected('the created pet is not a Pet', response, requestId);
    return created;
  }

  function petUrl(id: bigint | string): URL {
    const text = String(id);
    if (!isPositiveInt64Text(text)) throw new RangeError(`id "${text}" is not a positive int64 in plain decimal`);
    return new URL(text, `${petsUrl.href}/`);
  }

  async function updatePet(id: bigint | string, change: PetChange, callOptions: UpdatePetOptions = {}): Promise<TaggedPet<Mode>> {
    const requestId = callOptions.requestId ?? globalThis.crypto.randomUUID();
    const headers: Record<string, string> = {
      ...headersFor(requestId),
      'Content-Type': 'application/merge-patch+json',
      'Idempotency-Key': callOptions.idempotencyKey ?? globalThis.crypto.randomUUID(),
    };
    if (callOptions.ifMatch !== undefined) headers['If-Match'] = callOptions.ifMatch;
    const url = petUrl(id);
    const { response, body } = await call({ method: 'PATCH', url, requestId, headers, body: encodeNewPet(change) }, callOptions);
    const pet = decodePet(body, mode);
    const etag = response.headers.get('etag');
    if (pet === undefined || etag === null) throw unexpected('the changed pet is not a Pet with an ETag', response, requestId);
    return { pet, etag };
  }

  async function deletePet(id: bigint | string, callOptions: DeletePetOptions = {}): Promise<void> {
    const requestId = callOptions.requestId ?? globalThis.crypto.randomUUID();
    const headers = headersFor(requestId);
    if (callOptions.ifMatch !== undefined) headers['If-Match'] = callOptions.ifMatch;
    await call({ method: 'DELETE', url: petUrl(id), requestId, headers, goneAfterLostAnswerIsDone: true }, callOptions);
  }

  return {
    listPets,
    createPet,
    updatePet,
    deletePet,
    get rateLimit() {
      return gate.snapshot;
    },
  };
}

function parseOrUndefined(text: string): unknown {
  try {
    return parseLosslessly(text);
  } catch {
    return undefined;
  }
}
