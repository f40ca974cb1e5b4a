import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import protobuf from 'protobufjs';

/**
 * The part of OTLP's trace export request (opentelemetry-proto, `collector/trace/v1`) a test reads;
 * protobuf skips the fields left out. Field numbers as in the published .proto files.
 */
const OTLP_TRACES = protobuf.Root.fromJSON({
  nested: {
    otlp: {
      nested: {
        ExportTraceServiceRequest: { fields: { resourceSpans: { rule: 'repeated', type: 'ResourceSpans', id: 1 } } },
        ResourceSpans: { fields: { resource: { type: 'Resource', id: 1 }, scopeSpans: { rule: 'repeated', type: 'ScopeSpans', id: 2 } } },
        Resource: { fields: { attributes: { rule: 'repeated', type: 'KeyValue', id: 1 } } },
        ScopeSpans: { fields: { spans: { rule: 'repeated', type: 'Span', id: 2 } } },
        Span: {
          fields: {
            traceId: { type: 'bytes', id: 1 },
            spanId: { type: 'bytes', id: 2 },
            traceState: { type: 'string', id: 3 },
            parentSpanId: { type: 'bytes', id: 4 },
            name: { type: 'string', id: 5 },
            kind: { type: 'int32', id: 6 },
            attributes: { rule: 'repeated', type: 'KeyValue', id: 9 },
            status: { type: 'Status', id: 15 },
          },
        },
        Status: { fields: { message: { type: 'string', id: 2 }, code: { type: 'int32', id: 3 } } },
        KeyValue: { fields: { key: { type: 'string', id: 1 }, value: { type: 'AnyValue', id: 2 } } },
        AnyValue: {
          oneofs: { value: { oneof: ['stringValue', 'boolValue', 'intValue', 'doubleValue'] } },
          fields: {
            stringValue: { type: 'string', id: 1 },
            boolValue: { type: 'bool', id: 2 },
            intValue: { type: 'int64', id: 3 },
            doubleValue: { type: 'double', id: 4 },
          },
        },
      },
    },
  },
}).lookupType('otlp.ExportTraceServiceRequest');

/** OTLP's span kinds. */
export const SPAN_KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3 } as const;
/** OTLP's status codes. */
export const STATUS_CODE = { UNSET: 0, OK: 1, ERROR: 2 } as const;

export type AttributeValue = string | number | boolean;

/** One span as a collector received it; ids in lower-case hex, `parentSpanId` empty for a root. */
export interface ReceivedSpan {
  readonly service: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly traceState: string;
  readonly name: string;
  readonly kind: number;
  readonly attributes: Readonly<Record<string, AttributeValue>>;
  readonly statusCode: number;
}

export interface OtlpReceiver {
  /** The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  readonly endpoint: string;
  readonly spans: readonly ReceivedSpan[];
  /** Export requests received, and how many were not OTLP/protobuf posted to /v1/traces. */
  readonly requests: number;
  readonly malformed: number;
  /** Resolves with every span received so far once `condition` holds of them; rejects after `timeoutMs`. */
  waitFor(condition: (spans: readonly ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<readonly ReceivedSpan[]>;
  close(): Promise<void>;
}

interface DecodedKeyValue {
  key: string;
  value?: { stringValue?: string; boolValue?: boolean; intValue?: string; doubleValue?: number };
}

function attributesOf(list: readonly DecodedKeyValue[] | undefined): Record<string, AttributeValue> {
  const attributes: Record<string, AttributeValue> = {};
  for (const { key, value } of list ?? []) {
    if (value?.stringValue !== undefined) attributes[key] = value.stringValue;
    else if (value?.boolValue !== undefined) attributes[key] = value.boolValue;
    else if (value?.intValue !== undefined) attributes[key] = Number(value.intValue);
    else if (value?.doubleValue !== undefined) attributes[key] = value.doubleValue;
  }
  return attributes;
}

/** An OTLP/HTTP collector on a free loopback port that keeps every span it is sent (protobuf only). */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const waiters = new Set<() => void>();
  let requests = 0;
  let malformed = 0;
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      requests += 1;
      let body = Buffer.concat(chunks);
      if (request.method !== 'POST' || request.url !== '/v1/traces' || request.headers['content-type'] !== 'application/x-protobuf') {
        malformed += 1;
        response.writeHead(400).end();
        return;
      }
      if (request.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      const decoded = OTLP_TRACES.toObject(OTLP_TRACES.decode(body), { longs: String, bytes: Buffer, defaults: false }) as {
        resourceSpans?: Array<{ resource?: { attributes?: DecodedKeyValue[] }; scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }> }>;
      };
      for (const resourceSpans of decoded.resourceSpans ?? []) {
        const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name']);
        for (const scope of resourceSpans.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            spans.push({
              service,
              traceId: (span.traceId as Buffer).toString('hex'),
              spanId: (span.spanId as Buffer).toString('hex'),
              parentSpanId: ((span.parentSpanId as Buffer | undefined) ?? Buffer.alloc(0)).toString('hex'),
              traceState: (span.traceState as string | undefined) ?? '',
              name: span.name as string,
              kind: (span.kind as number | undefined) ?? 0,
              attributes: attributesOf(span.attributes as DecodedKeyValue[] | undefined),
              statusCode: (span.status as { code?: number } | undefined)?.code ?? 0,
            });
          }
        }
      }
      response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      for (const wake of waiters) wake();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    get requests() {
      return requests;
    },
    get malformed() {
      return malformed;
    },
    waitFor(condition, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          if (!condition(spans)) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(spans);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`spans received in ${timeoutMs} ms do not hold the condition: ${JSON.stringify(spans.map((span) => [span.service, span.name]))}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
