import type { Metadata, ServiceError } from '@grpc/grpc-js';
import { status as Status } from '@grpc/grpc-js';
import { type Attributes, type Span, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import { ATTR_RPC_METHOD, ATTR_RPC_STATUS_CODE, ATTR_RPC_SYSTEM_NAME } from '@opentelemetry/semantic-conventions';
import { callMetadata, type CallMetadataValues, PET_SERVICE_NAME, type PetServiceMethod } from '@petstore/proto';
import { startChildSpan, traceHeaders } from '@petstore/runtime';

/** A method's fully qualified name, as its spans are named, and their attributes. */
function rpcSpan(method: PetServiceMethod): { readonly name: string; readonly attributes: Attributes } {
  const name = `${PET_SERVICE_NAME}/${method}`;
  return { name, attributes: { [ATTR_RPC_SYSTEM_NAME]: 'grpc', [ATTR_RPC_METHOD]: name } };
}

/** Made once: a call that is not traced allocates nothing for its span. */
const RPC_SPANS: Record<PetServiceMethod, ReturnType<typeof rpcSpan>> = {
  ListPets: rpcSpan('ListPets'),
  CreatePet: rpcSpan('CreatePet'),
  GetPet: rpcSpan('GetPet'),
  UpdatePet: rpcSpan('UpdatePet'),
  DeletePet: rpcSpan('DeletePet'),
};

/**
 * A pet service call made for a request: its metadata carries `values` and the request's trace
 * context; when the request is traced, the call has a client span (RPC semantic conventions) that
 * is the parent the pet service sees, and that ends with the call's gRPC status.
 */
export function tracedCall<T>(
  tracer: Tracer,
  parent: Span,
  method: PetServiceMethod,
  values: CallMetadataValues,
  send: (metadata: Metadata) => Promise<T>,
): Promise<T> {
  const { name, attributes } = RPC_SPANS[method];
  const span = startChildSpan(tracer, parent, name, attributes);
  const metadata = callMetadata({ ...values, ...traceHeaders(span ?? parent) });
  if (span === undefined) return send(metadata);
  return send(metadata).then(
    (result) => {
      span.setAttribute(ATTR_RPC_STATUS_CODE, 'OK');
      span.end();
      return result;
    },
    (error: unknown) => {
      const code = (error as Partial<ServiceError>).code;
      span.setAttribute(ATTR_RPC_STATUS_CODE, (code === undefined ? undefined : Status[code]) ?? 'UNKNOWN');
      span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      throw error;
    },
  );
}
