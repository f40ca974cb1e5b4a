import { type Channel, credentials, makeGenericClientConstructor, type ServiceError } from '@grpc/grpc-js';
import { PET_SERVICE_NAME } from '@petstore/proto';
import { service as healthService } from 'grpc-health-check';

/** A dependency check for readiness: resolves when the dependency answers, rejects otherwise. */
export type ReadinessCheck = () => Promise<void>;

interface HealthStub {
  check(
    request: { service: string },
    options: { deadline: number },
    callback: (error: ServiceError | null, response?: { status: string | number }) => void,
  ): void;
}

const HealthClient = makeGenericClientConstructor(healthService, 'Health');

/**
 * Asks the pet service's standard gRPC health service whether it is SERVING (which it is not
 * while its store is unreachable or it is shutting down). It shares the pet client's channel, so
 * readiness reports on the very connections that serve traffic.
 */
export function petServiceHealthCheck(channel: Channel, timeoutMs: number): ReadinessCheck {
  const stub = new HealthClient('unused', credentials.createInsecure(), { channelOverride: channel }) as unknown as HealthStub;
  return () =>
      new Promise((resolve, reject) => {
        stub.check({ service: PET_SERVICE_NAME }, { deadline: Date.now() + timeoutMs }, (error, response) => {
          if (error) reject(error);
          else if (response?.status === 'SERVING' || response?.status === 1) resolve();
          else reject(new Error(`pet service is ${String(response?.status)}`));
        });
      });
}
