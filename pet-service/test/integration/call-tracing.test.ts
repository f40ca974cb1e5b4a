import { randomBytes } from 'node:crypto';
import { ExportResultCode } from '@opentelemetry/core';
import { type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace';
import { callMetadata, createPetServiceClient, PetStatus, type PromisePetServiceClient } from '@petstore/proto';
import { createTracing, type Tracing, TRACING_ENV, tracingSettings } from '@petstore/runtime';
import { expect } from 'chai';
import { cleanEnv } from 'envalid';
import { capturedLogs } from '../../../system-test/support/captured-logs';
import { MemoryPetRepository } from '../../src/store/memory-pet-repository';
import { createServer, type RunningServer } from '../../src/server';

/** Keeps every span it is given; export every millisecond so a test waits little. */
function collecting(): SpanExporter & { readonly spans: ReadableSpan[]; next(): Promise<void> } {
  const spans: ReadableSpan[] = [];
  let wake: (() => void) | undefined;
  return {
    spans,
    export: (batch, done) => {
      spans.push(...batch);
      done({ code: ExportResultCode.SUCCESS });
      wake?.();
    },
    next: () => new Promise<void>((resolve) => (wake = resolve)),
    shutdown: () => Promise.resolve(),
  };
}

describe('pet service: an internal caller’s trace context', () => {
  let server: RunningServer;
  let client: PromisePetServiceClient;
  let tracing: Tracing;
  let exporter: ReturnType<typeof collecting>;
  let lines: Array<Record<string, unknown>>;

  beforeEach(async () => {
    exporter = collecting();
    const settings = tracingSettings(cleanEnv({ OTEL_BSP_SCHEDULE_DELAY: '1' }, TRACING_ENV), 'pet-service');
    tracing = createTracing(settings, { exporter });
    const logs = capturedLogs('debug');
    lines = logs.lines;
    server = await createServer({
      host: '127.0.0.1',
      port: 0,
      repository: new MemoryPetRepository(),
      pageTokenSecret: 's',
      logger: logs.logger,
      tracer: tracing.tracer,
      store: { system: 'mongodb', namespace: 'petstore' },
    });
    client = createPetServiceClient(`127.0.0.1:${server.port}`, { callerId: 'svc:test' });
  });

  afterEach(async () => {
    client.close();
    await server.shutdown();
    await tracing.shutdown();
  });

  it('makes the call’s span a child of the caller’s traceparent, with a store span under it, and logs the ids', async () => {
    const traceId = randomBytes(16).toString('hex');
    const parentId = randomBytes(8).toString('hex');
    const exported = exporter.next();
    await client.createPet(
      { name: 'Rex', categoryId: '7', status: PetStatus.PET_STATUS_UNSPECIFIED },
      callMetadata({ requestId: 'r-1', traceparent: `00-${traceId}-${parentId}-01`, tracestate: 'svc=billing' }),
    );
    await exported;
    const served = exporter.spans.find((span) => span.name === 'petstore.v1.PetService/CreatePet')!;
    expect(served.spanContext().traceId).to.equal(traceId);
    expect(served.parentSpanContext?.spanId).to.equal(parentId);
    expect(served.spanContext().traceState?.get('svc')).to.equal('billing');
    expect(served.attributes).to.include({ 'rpc.system.name': 'grpc', 'rpc.method': 'petstore.v1.PetService/CreatePet', 'rpc.status_code': 'OK' });
    const store = exporter.spans.find((span) => span.name === 'insert pets')!;
    expect(store.parentSpanContext?.spanId).to.equal(served.spanContext().spanId);
    expect(store.attributes).to.deep.equal({
      'db.system.name': 'mongodb',
      'db.namespace': 'petstore',
      'db.collection.name': 'pets',
      'db.operation.name': 'insert',
    });
    const line = lines.find((entry) => entry.msg === 'grpc call' && entry.requestId === 'r-1')!;
    expect(line).to.include({ traceId, spanId: served.spanContext().spanId });
  });

  it('starts a trace for a call without traceparent, and leaves the span of a NOT_FOUND call unset', async () => {
    const exported = exporter.next();
    await client.getPet({ id: '42' }, callMetadata({ requestId: 'r-2' })).catch(() => undefined);
    await exported;
    const served = exporter.spans.find((span) => span.name === 'petstore.v1.PetService/GetPet')!;
    expect(served.parentSpanContext).to.equal(undefined);
    expect(served.attributes['rpc.status_code']).to.equal('NOT_FOUND');
    // NOT_FOUND is the caller's doing, not the server's: the span's status stays unset.
    expect(served.status.code).to.equal(0);
    expect(exporter.spans.find((span) => span.name === 'find pets')?.parentSpanContext?.spanId).to.equal(served.spanContext().spanId);
  });
});
