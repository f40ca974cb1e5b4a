import { createHook } from 'node:async_hooks';
import { Metadata, type ServiceError } from '@grpc/grpc-js';
import { createUnaryTransport, fieldViolationOf, type UnaryTransport } from '@petstore/proto';
import type { CallOutcome, CallRequest, Closed, Inspection, MetadataJson, Request, Response } from './transport-process';

/*
 * A process that holds one unary transport and makes the calls its parent sends over IPC
 * (transport-process.ts), so that a misbehaving server's answers reach the transport in a process
 * with no test runner catching what it throws: an uncaught error ends this process, and the parent
 * fails on it. Its own resources are counted here too, where nothing else keeps any.
 */

/**
 * How long close() may take to release sockets: well below the parent's call timeouts, so that a
 * call's timer left running after the call ended is still there when the resources are compared.
 */
const RESOURCES_SETTLE_MS = 500;

let transport: UnaryTransport | undefined;
let baseline: string[] = [];

/**
 * Sockets, connects, lookups, file requests and timers alive now, unref'd ones included, which
 * process.getActiveResourcesInfo() leaves out (a transport unrefs an idle connection and its
 * keepalive timer): counted from async_hooks' init and destroy, which for these types come as the
 * resource opens and closes, not with garbage collection.
 */
const TRACKED_TYPES = new Set(['TCPWRAP', 'TLSWRAP', 'TCPCONNECTWRAP', 'GETADDRINFOREQWRAP', 'FSREQCALLBACK', 'FSEVENTWRAP', 'STATWATCHER', 'Timeout']);
const alive = new Map<number, string>();
createHook({
  init: (id, type) => {
    if (TRACKED_TYPES.has(type)) alive.set(id, type);
  },
  destroy: (id) => {
    alive.delete(id);
  },
}).enable();

/** What keeps the process alive (getActiveResourcesInfo), then every tracked resource alive, `alive:` before its type. */
function activeResources(): string[] {
  return [...process.getActiveResourcesInfo().sort(), ...[...alive.values()].map((type) => `alive:${type}`).sort()];
}

function metadataJson(metadata: Metadata): MetadataJson {
  return Object.entries(metadata.toJSON()).map(([key, values]) => [key, values.map((value) => (typeof value === 'string' ? value : { base64: value.toString('base64') }))]);
}

function metadataOf(json: MetadataJson): Metadata {
  const metadata = new Metadata();
  for (const [key, values] of json) for (const value of values) metadata.add(key, typeof value === 'string' ? value : Buffer.from(value.base64, 'base64'));
  return metadata;
}

async function call(request: CallRequest): Promise<CallOutcome> {
  if (transport === undefined) throw new Error('no transport open');
  const headers: MetadataJson[] = [];
  const started = performance.now();
  const deadline = Date.now() + request.timeoutMs;
  try {
    const response = await transport.call(request.path, Buffer.from(request.request, 'base64'), metadataOf(request.metadata), {
      deadline,
      onHeaders: (received) => headers.push(metadataJson(received)),
    });
    return { ok: true, response: response.toString('base64'), isBuffer: Buffer.isBuffer(response), headers, elapsedMs: performance.now() - started };
  } catch (thrown) {
    const error = thrown as ServiceError;
    const metadata = error.metadata instanceof Metadata ? error.metadata : undefined;
    return {
      ok: false,
      error: {
        isError: error instanceof Error,
        message: String(error?.message),
        code: error?.code,
        details: error?.details,
        metadataIsMetadata: metadata !== undefined,
        metadata: metadata === undefined ? [] : metadataJson(metadata),
        fieldViolation: fieldViolationOf(metadata) ?? null,
      },
      headers,
      elapsedMs: performance.now() - started,
    };
  }
}

function inspect(): Inspection {
  return { state: transport!.state(), connections: { ...transport!.connections() }, activeResources: activeResources() };
}

/**
 * Closes the transport, then waits (bounded) for its connections to be gone and this process's
 * resources to be the baseline again, and says what they were then.
 */
async function close(): Promise<Closed> {
  transport!.close();
  const until = Date.now() + RESOURCES_SETTLE_MS;
  let closed = inspect();
  const settled = (): boolean => closed.activeResources.join() === baseline.join() && Object.values(closed.connections).every((count) => count === 0);
  while (!settled() && Date.now() < until) {
    // Not a timer of its own, which would be counted.
    await new Promise((resolve) => setImmediate(resolve));
    closed = inspect();
  }
  transport = undefined;
  return { ...closed, baseline };
}

/** Closes the transport if one is open, and waits (bounded) for its sockets to be gone, checking nothing. */
async function discard(): Promise<null> {
  transport?.close();
  transport = undefined;
  const until = Date.now() + 2_000;
  while ([...alive.values()].some((type) => type === 'TCPWRAP' || type === 'TLSWRAP') && Date.now() < until) await new Promise((resolve) => setImmediate(resolve));
  return null;
}

async function handle(request: Request): Promise<unknown> {
  switch (request.op) {
    case 'open':
      if (transport !== undefined) throw new Error('a transport is already open');
      baseline = activeResources();
      transport = createUnaryTransport(request.target, request.options);
      return { baseline };
    case 'call':
      return call(request);
    case 'inspect':
      return inspect();
    case 'close':
      return close();
    case 'discard':
      return discard();
  }
}

process.on('message', (request: Request) => {
  handle(request).then(
    (result) => process.send!({ id: request.id, result } satisfies Response),
    (error: unknown) => process.send!({ id: request.id, failure: String((error as Error)?.stack ?? error) } satisfies Response),
  );
});
process.send!({ id: 0, result: 'ready' } satisfies Response);
