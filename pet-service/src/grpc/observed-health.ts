import { HealthImplementation, type ServingStatus } from 'grpc-health-check';

/**
 * grpc-health-check's health service, which keeps no status a caller can read, remembering the
 * status of each service as set: the admin port's `/readyz` answers with the whole server's (''),
 * for probes that cannot speak gRPC over TLS (the kubelet's).
 */
export class ObservedHealth extends HealthImplementation {
  private readonly statuses = new Map<string, ServingStatus>();

  constructor(initial: Record<string, ServingStatus>) {
    super(initial);
    for (const [service, status] of Object.entries(initial)) this.statuses.set(service, status);
  }

  override setStatus(service: string, status: ServingStatus): void {
    this.statuses.set(service, status);
    super.setStatus(service, status);
  }

  /** The status last set for `service`; UNKNOWN for one never set. */
  status(service: string): ServingStatus {
    return this.statuses.get(service) ?? 'UNKNOWN';
  }
}
