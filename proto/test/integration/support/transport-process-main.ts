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

function activeResources(): string[] {
  return process.getActiveResourcesInfo().sort();
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

/** Closes the transport, then waits (bounded) for this process's resources to be the baseline again. */
async function close(): Promise<Closed> {
  transport!.close();
  const closed = inspect();
  const until = Date.now() + RESOURCES_SETTLE_MS;
  let resources = activeResources();
  while (resources.join() !== baseline.join() && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 5));
    resources = activeResources();
  }
  transport = undefined;
  return { ...closed, baseline, activeResources: resources };
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
      transport?.close();
      transport = undefined;
      return null;
  }
}

process.on('message', (request: Request) => {
  handle(request).then(
    (result) => process.send!({ id: request.id, result } satisfies Response),
    (error: unknown) => process.send!({ id: request.id, failure: String((error as Error)?.stack ?? error) } satisfies Response),
  );
});
process.send!({ id: 0, result: 'ready' } satisfies Response);
