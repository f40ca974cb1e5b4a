import { CertificateFilesError, type CertificateFilesOptions } from '@petstore/proto';
import { ConfigError } from '@petstore/runtime';
import { str } from 'envalid';
import type { Logger } from 'pino';

/** TLS to the pet service, as the configuration gives it. */
export interface PetServiceTls {
  /** The CA the pet service's certificate must chain to. */
  readonly caFile: string;
  /** The gateway's client certificate and key, which a pet service requiring them checks. */
  readonly certFile: string | undefined;
  readonly keyFile: string | undefined;
}

/** The variables of {@link PetServiceTls}, for the gateway's envalid spec. */
export const PET_SERVICE_TLS_ENV = {
  PET_SERVICE_TLS_CA_FILE: str({ default: '', desc: "PEM CA bundle the pet service's certificate is checked against; set, calls use TLS; empty: plaintext" }),
  PET_SERVICE_TLS_CERT_FILE: str({ default: '', desc: 'PEM client certificate (chain) the gateway presents to the pet service (mutual TLS)' }),
  PET_SERVICE_TLS_KEY_FILE: str({ default: '', desc: 'PEM private key of PET_SERVICE_TLS_CERT_FILE' }),
};

/** The TLS settings, or undefined for plaintext. @throws ConfigError naming the variable */
export function petServiceTls(parsed: { PET_SERVICE_TLS_CA_FILE: string; PET_SERVICE_TLS_CERT_FILE: string; PET_SERVICE_TLS_KEY_FILE: string }): PetServiceTls | undefined {
  const { PET_SERVICE_TLS_CA_FILE: caFile, PET_SERVICE_TLS_CERT_FILE: certFile, PET_SERVICE_TLS_KEY_FILE: keyFile } = parsed;
  if ((certFile === '') !== (keyFile === '')) {
    throw new ConfigError(certFile === '' ? 'PET_SERVICE_TLS_CERT_FILE: required with PET_SERVICE_TLS_KEY_FILE' : 'PET_SERVICE_TLS_KEY_FILE: required with PET_SERVICE_TLS_CERT_FILE');
  }
  if (caFile === '') {
    if (certFile !== '') throw new ConfigError("PET_SERVICE_TLS_CERT_FILE: applies only with PET_SERVICE_TLS_CA_FILE (the CA the pet service's certificate is checked against)");
    return undefined;
  }
  return Object.freeze({ caFile, certFile: certFile === '' ? undefined : certFile, keyFile: keyFile === '' ? undefined : keyFile });
}

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
