import { setLogger } from '@grpc/grpc-js';

/**
 * What grpc-js logs when a bind fails, just before the error it throws. That error becomes the one
 * line that names the variable (`PET_SERVICE_PORT 50051: address already in use`), so this line
 * would only say the same thing again, as JSON on stdout beside it.
 */
const BIND_FAILURE = /^No address added out of total \d+ resolved$/;

/**
 * grpc-js's logger as its default one (the console, each line marked with its severity's letter),
 * less the line a failed bind logs before its error. Called once, by main.
 */
export function installGrpcLibraryLog(): void {
  setLogger({
    error: (message: string, ...rest: unknown[]) => {
      if (!BIND_FAILURE.test(message)) console.error(`E ${message}`, ...rest);
    },
    info: (message: string, ...rest: unknown[]) => console.error(`I ${message}`, ...rest),
    debug: (message: string, ...rest: unknown[]) => console.error(`D ${message}`, ...rest),
  } as unknown as Console);
}
