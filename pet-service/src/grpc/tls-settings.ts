import { CertificateFiles, type CertificateFilesError } from '@petstore/proto';
import { ConfigError } from '@petstore/runtime';
import { str } from 'envalid';
import type { Logger } from 'pino';

/** TLS on the gRPC port, as the configuration gives it. */
export interface GrpcServerTls {
  readonly certFile: string;
  readonly keyFile: string;
  /** Callers must present a certificate signed by this CA; undefined: TLS without client certificates. */
  readonly clientCaFile: string | undefined;
}

/** The variables of {@link GrpcServerTls}, for the pet service's envalid spec. */
export const GRPC_TLS_ENV = {
  GRPC_TLS_CERT_FILE: str({ default: '', desc: 'PEM certificate (chain) the gRPC port presents; with GRPC_TLS_KEY_FILE it serves TLS; empty: plaintext' }),
  GRPC_TLS_KEY_FILE: str({ default: '', desc: 'PEM private key of GRPC_TLS_CERT_FILE' }),
  GRPC_TLS_CLIENT_CA_FILE: str({ default: '', desc: 'PEM CA bundle; set, every caller must present a certificate it signed (mutual TLS)' }),
};

/** The TLS settings, or undefined for plaintext. @throws ConfigError naming the variable */
export function grpcServerTls(parsed: { GRPC_TLS_CERT_FILE: string; GRPC_TLS_KEY_FILE: string; GRPC_TLS_CLIENT_CA_FILE: string }): GrpcServerTls | undefined {
  const { GRPC_TLS_CERT_FILE: certFile, GRPC_TLS_KEY_FILE: keyFile, GRPC_TLS_CLIENT_CA_FILE: clientCaFile } = parsed;
  if (certFile === '' && keyFile === '') {
    if (clientCaFile !== '') throw new ConfigError('GRPC_TLS_CLIENT_CA_FILE: applies only with GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE (client certificates need TLS)');
    return undefined;
  }
  if (certFile === '') throw new ConfigError('GRPC_TLS_CERT_FILE: required with GRPC_TLS_KEY_FILE');
  if (keyFile === '') throw new ConfigError('GRPC_TLS_KEY_FILE: required with GRPC_TLS_CERT_FILE');
  return Object.freeze({ certFile, keyFile, clientCaFile: clientCaFile === '' ? undefined : clientCaFile });
}

const VARIABLES = { certFile: 'GRPC_TLS_CERT_FILE', keyFile: 'GRPC_TLS_KEY_FILE', caFile: 'GRPC_TLS_CLIENT_CA_FILE' } as const;

/**
 * Reads the files of `tls` and keeps following them, logging each reload and each rejected
 * content. @throws ConfigError naming the variable of a file that cannot be used.
 */
export function openServerCertificates(tls: GrpcServerTls, logger: Logger): CertificateFiles {
  try {
    return new CertificateFiles({
      certFile: tls.certFile,
      keyFile: tls.keyFile,
      caFile: tls.clientCaFile,
      onReject: (error) => logger.error({ reason: `${VARIABLES[error.file]}: ${error.message}` }, 'gRPC TLS files rejected; the last good certificates stay in force'),
    });
  } catch (error) {
    const refused = error as CertificateFilesError;
    throw new ConfigError(`${VARIABLES[refused.file]}: ${refused.message}`);
  }
}
