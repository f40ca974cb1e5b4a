import { type ServiceProcess, startService } from './service-process';

/** A pet service process and a gateway process calling it, each started with its `main.ts`. */
export interface ProcessStack {
  readonly petService: ServiceProcess;
  readonly gateway: ServiceProcess;
  /** The gateway's public URL, `http://127.0.0.1:<port>`. */
  readonly baseUrl: string;
  /** Stops the gateway, then the pet service, so no call of the gateway's outlives its callee. */
  stop(): Promise<void>;
}

/**
 * Starts the pet service, then a gateway whose PET_SERVICE_ADDR is that pet service, on free
 * ports. `gateway` may override PET_SERVICE_ADDR, and `petServiceAddress` make it from the port (a
 * name the pet service's certificate holds, for TLS). A gateway that fails to start stops the pet
 * service before the error is thrown, so a failed `before` leaves no process behind.
 */
export async function startProcessStack(
  env: { petService?: NodeJS.ProcessEnv; gateway?: NodeJS.ProcessEnv; petServiceAddress?: (port: number) => string } = {},
): Promise<ProcessStack> {
  const petService = await startService('pet-service', env.petService);
  let gateway: ServiceProcess;
  try {
    gateway = await startService('gateway', { PET_SERVICE_ADDR: env.petServiceAddress?.(petService.port) ?? `127.0.0.1:${petService.port}`, ...env.gateway });
  } catch (error) {
    await petService.stop();
    throw error;
  }
  return {
    petService,
    gateway,
    baseUrl: `http://127.0.0.1:${gateway.port}`,
    stop: async () => {
      await gateway.stop();
      await petService.stop();
    },
  };
}
