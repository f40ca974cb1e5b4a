import { CertificateFilesError, type CertificateFilesOptions } from '@petstore/proto';
import { ConfigError } from '@petstore/runtime';
import type { Logger } from 'pino';
import type { PetServiceTls } from '../config';

const VARIABLES = { caFile: 'PET_SERVICE_TLS_CA_FILE', certFile: 'PET_SERVICE_TLS_CERT_FILE', keyFile: 'PET_SERVICE_TLS_KEY_FILE' } as const;

/** `createPetServiceClient`'s `tls` option for `tls`, logging each reload and each rejected content. */
export function petServiceTlsOption(tls: PetServiceTls, logger: Logger | undefined): CertificateFilesOptions {
  return {
    caFile: tls.caFile,
    certFile: tls.certFile,
    keyFile: tls.keyFile,
    onReload: (certificates) =>
      logger?.info({ subject: certificates.subject, notAfter: certificates.notAfter === undefined ? undefined : new Date(certificates.notAfter).toISOString() }, 'pet service TLS certificates reloaded; new connections use them'),
    onReject: (error) => logger?.error({ reason: `${VARIABLES[error.file]}: ${error.message}` }, 'pet service TLS files rejected; the last good certificates stay in force'),
  };
}

/** `error` as the one line naming the variable, when it is about a certificate file. */
export function certificateConfigError(error: unknown): unknown {
  return error instanceof CertificateFilesError ? new ConfigError(`${VARIABLES[error.file]}: ${error.message}`) : error;
}
