import { createPetServiceClient, InvalidTargetError, type PetServiceMethod, type PromisePetServiceClient, type ProxySettings } from '@petstore/proto';
import { ConfigError } from '@petstore/runtime';
import { status as Status } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { GatewayMetrics } from '../observability/metrics';
import { perPair } from '../observability/metric-children';
import type { PetServiceTls } from '../config';
import { certificateConfigError, petServiceTlsOption } from './pet-service-tls';

/** Settings for {@link createPetClient}. */
export interface PetClientOptions {
  /**
   * A gRPC target: `host:port`, or `dns:///name:port` (a headless Service) to spread calls over
   * every address with round_robin.
   */
  readonly target: string;
  /** Deadline of every call, retries included. */
  readonly timeoutMs: number;
  readonly metrics?: GatewayMetrics;
  /** TLS from PEM files, followed as they change (reloads and rejections are logged); unset: plaintext. */
  readonly tls?: PetServiceTls | undefined;
  /**
   * The HTTP CONNECT proxy calls tunnel through, as config.ts read it (`false`: none). Unset: the
   * client reads the process's environment itself, for tests and tools outside `main.ts`.
   */
  readonly proxy?: ProxySettings | false;
  readonly logger?: Logger;
}

/** The pet service as the gateway uses it: the client every internal caller gets. */
export type PetClient = PromisePetServiceClient;

/**
 * The gateway's one pet service client: `@petstore/proto`'s {@link createPetServiceClient} with
 * its production defaults (deadline, read retries, round_robin, keepalive), so that an internal
 * service calls the pet service exactly as the gateway does. The gateway adds its metrics.
 * @throws ConfigError naming the variable of a certificate file that cannot be used, or
 * PET_SERVICE_ADDR for a target the transport cannot read.
 */
export function createPetClient(options: PetClientOptions): PetClient {
  const { metrics, tls } = options;
  let client: PetClient;
  try {
    client = createPetServiceClient(options.target, {
      deadlineMs: options.timeoutMs,
      ...(metrics === undefined ? {} : { onCallEnd: callMetrics(metrics) }),
      ...(tls === undefined ? {} : { tls: petServiceTlsOption(tls, options.logger) }),
      ...(options.proxy === undefined ? {} : { transportOptions: { proxy: options.proxy } }),
    });
  } catch (error) {
    // A certificate file that cannot be used, or a target config.ts let through that the transport
    // does not read, is a start-up error naming its variable.
    if (error instanceof InvalidTargetError) throw new ConfigError(`PET_SERVICE_ADDR: ${error.message}`);
    throw certificateConfigError(error);
  }
  metrics?.readCertificatesWith(() => client.certificates());
  metrics?.countConnectionsWith(() => client.transport.connections());
  return client;
}

/** Counts and times each call by method and status, through children bound once per pair. */
function callMetrics(metrics: GatewayMetrics): (method: PetServiceMethod, code: Status, startedAt: bigint) => void {
  const childrenOf = perPair((method: PetServiceMethod, code: Status) => {
    const labels = { method, code: Status[code]! };
    return { calls: metrics.grpcClientCalls.labels(labels), seconds: metrics.grpcClientCallSeconds.labels(labels) };
  });
  return (method, code, startedAt) => {
    const children = childrenOf(method, code);
    children.calls.inc();
    children.seconds.observe(Number(process.hrtime.bigint() - startedAt) / 1e9);
  };
}
