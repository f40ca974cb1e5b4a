import { credentials, experimental, Metadata, Server, type ServiceError, status as Status } from '@grpc/grpc-js';
import { PetServiceClient, PetStatus } from '@petstore/proto';
import { expect } from 'chai';
import { certificateDirectory, type CertificateDirectory, createTestCa, type TestCa } from '../../../system-test/support/test-certificates';
import { waitFor } from '../../../system-test/support/wait-for';

/**
 * What grpc-js's own file watcher does when the files on disk stop being a good pair: why the
 * pet service and `createPetServiceClient` follow their files with `CertificateFiles` instead
 * (docs/decisions.md, "TLS on the pet service"). The same rotation keeps working there
 * (grpc-tls.test.ts, "keeps the last good certificate").
 */
describe('grpc-js FileWatcherCertificateProvider, for comparison', function () {
  this.timeout(20_000);
  let ca: TestCa;
  let files: CertificateDirectory;
  let server: Server;
  let port: number;

  beforeEach(async () => {
    ca = createTestCa();
    files = certificateDirectory();
    const issued = ca.issue('pet-service');
    files.write('ca.crt', ca.cert);
    files.write('tls.crt', issued.cert);
    files.write('tls.key', issued.key);
    const provider = new experimental.FileWatcherCertificateProvider({
      certificateFile: `${files.path}/tls.crt`,
      privateKeyFile: `${files.path}/tls.key`,
      refreshIntervalMs: 50,
    });
    server = new Server();
    // The identity provider first and no CA (no client certificates): the function's parameters
    // are declared (caCertificateProvider, identityCertificateProvider) but handed to the
    // constructor as (identity, CA) (grpc-js 1.14.7).
    const serverCredentials = experimental.createCertificateProviderServerCredentials(provider, null, false);
    port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', serverCredentials, (error, bound) => (error ? reject(error) : resolve(bound))),
    );
  });

  afterEach(() => {
    server.forceShutdown();
    files.remove();
  });

  /** A call on a new connection: UNIMPLEMENTED means it connected (no service is served). */
  function newConnectionCall(): Promise<ServiceError> {
    const client = new PetServiceClient(`localhost:${port}`, credentials.createSsl(Buffer.from(ca.cert)));
    return new Promise((resolve) => {
      client.listPets({ pageSize: 1, pageToken: '', status: PetStatus.PET_STATUS_UNSPECIFIED }, new Metadata(), { deadline: Date.now() + 2000 }, (error) => {
        client.close();
        resolve(error!);
      });
    });
  }

  it('drops every new connection once the key on disk no longer matches the certificate, until the files are a pair again', async () => {
    await waitFor(async () => (await newConnectionCall()).code === Status.UNIMPLEMENTED, 5000);
    // A rotation caught half way: the next key beside the current certificate.
    files.write('tls.key', ca.issue('pet-service').key);
    await waitFor(async () => (await newConnectionCall()).code === Status.UNAVAILABLE, 5000);
    expect((await newConnectionCall()).code, 'still refused: the good pair it had is gone').to.equal(Status.UNAVAILABLE);
  });
});
