import { Metadata } from '@grpc/grpc-js';
import { PET_SERVICE_NAME, type UnaryTransport } from '@petstore/proto';
import { service as healthService } from 'grpc-health-check';

/** A dependency check for readiness: resolves when the dependency answers, rejects otherwise. */
export type ReadinessCheck = () => Promise<void>;

const { path, requestSerialize, responseDeserialize } = healthService.Check!;
/** The request never changes: encoded once. */
const CHECK_REQUEST = requestSerialize({ service: PET_SERVICE_NAME });

/**
 * Asks the pet service's standard gRPC health service whether it is SERVING (which it is not
 * while its store is unreachable or it is shutting down). It shares the pet client's transport, so
 * readiness reports on the very connections that serve traffic.
 */
export function petServiceHealthCheck(transport: Pick<UnaryTransport, 'call'>, timeoutMs: number): ReadinessCheck {
  return async () => {
    const bytes = await transport.call(path, CHECK_REQUEST, new Metadata(), { deadline: Date.now() + timeoutMs });
    const response = responseDeserialize(bytes) as { status?: string | number };
    if (response.status !== 'SERVING' && response.status !== 1) throw new Error(`pet service is ${String(response.status)}`);
  };
}
