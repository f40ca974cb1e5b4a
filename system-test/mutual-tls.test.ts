import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { startProcessStack, type ProcessStack } from './support/process-stack';
import { type ServiceProcess, startService } from './support/service-process';
import { certificateDirectory, type CertificateDirectory, createTestCa } from './support/test-certificates';

const ADMIN_TOKEN = 'an-admin-token-from-a-file';
const PAGE_TOKEN_SECRET = 'a-page-token-secret-from-a-file';
const DEMO_KEY = { Authorization: 'Bearer demo-free-key-0000' };

/** Each service's TLS variables, pointing at the files {@link writeMutualTlsFiles} wrote. */
interface MutualTlsEnv {
  readonly petService: NodeJS.ProcessEnv;
  readonly gateway: NodeJS.ProcessEnv;
}

/**
 * Writes a new CA (`ca.crt`), the pet service's certificate holding `names` (default: the test
 * CA's) and the gateway's client certificate into `files`.
 */
function writeMutualTlsFiles(files: CertificateDirectory, names?: readonly string[]): MutualTlsEnv {
  const ca = createTestCa();
  const server = ca.issue('pet-service', names === undefined ? {} : { names });
  const gateway = ca.issue('gateway', { use: 'client' });
  return {
    petService: {
      GRPC_TLS_CERT_FILE: files.write('tls.crt', server.cert),
      GRPC_TLS_KEY_FILE: files.write('tls.key', server.key),
      GRPC_TLS_CLIENT_CA_FILE: files.write('ca.crt', ca.cert),
    },
    gateway: {
      PET_SERVICE_TLS_CA_FILE: `${files.path}/ca.crt`,
      PET_SERVICE_TLS_CERT_FILE: files.write('gateway.crt', gateway.cert),
      PET_SERVICE_TLS_KEY_FILE: files.write('gateway.key', gateway.key),
    },
  };
}

describe('gateway to pet service over mutual TLS, secrets from files, as the manifests run them', function () {
  this.timeout(60_000);
  let files: CertificateDirectory;
  let stack: ProcessStack;

  before(async () => {
    files = certificateDirectory();
    const tls = writeMutualTlsFiles(files);
    files.write('admin-token', `${ADMIN_TOKEN}\n`);
    files.write('page-token-secret', `${PAGE_TOKEN_SECRET}\n`);
    stack = await startProcessStack({
      petService: {
        ...tls.petService,
        PAGE_TOKEN_SECRET_FILE: `${files.path}/page-token-secret`,
        LOG_SLOW_CALL_MS: '0',
      },
      gateway: {
        ...tls.gateway,
        ADMIN_TOKEN_FILE: `${files.path}/admin-token`,
      },
      petServiceAddress: (port) => `localhost:${port}`,
    });
  });

  after(async () => {
    await stack?.stop();
    files?.remove();
  });

  it('serves the API through the mutual TLS hop, the pet service naming the gateway’s certificate on each call', async () => {
    for (const name of ['Rex', 'Tom']) {
      const created = await fetch(`${stack.baseUrl}/v1/pets`, {
        method: 'POST',
        headers: { ...DEMO_KEY, 'Content-Type': 'application/json' },
        body: JSON.stringify({ name, categoryId: 1 }),
      });
      expect(created.status).to.equal(201);
    }
    const page = await fetch(`${stack.baseUrl}/v1/pets?limit=1`, { headers: DEMO_KEY });
    expect(page.status).to.equal(200);
    expect(page.headers.get('link'), 'a next page, its token signed with the secret from the file').to.match(/cursor=/);
    const call = await stack.petService.waitForLog((line) => line.msg === 'grpc call' && line.method === 'ListPets');
    expect(call.peerSubject).to.equal('CN=gateway, O=petstore tests');
    expect(stack.petService.listening.grpcTransport).to.equal('mutual TLS');
    const ready = await fetch(`http://127.0.0.1:${stack.gateway.adminPort}/readyz`);
    expect(ready.status, 'gRPC health over the same TLS channel').to.equal(200);
  });

  it('takes the admin token from its file, and neither process’s environment holds a secret', async () => {
    const unban = (token: string) =>
      fetch(`http://127.0.0.1:${stack.gateway.adminPort}/admin/bans/demo-free`, { method: 'DELETE', headers: { Authorization: `Bearer ${token}` } });
    expect((await unban('not-the-admin-token-at-all')).status).to.equal(401);
    expect((await unban(ADMIN_TOKEN)).status, 'no ban in force: 404, past the token check').to.equal(404);
    for (const service of [stack.gateway, stack.petService]) {
      const environ = readFileSync(`/proc/${service.child.pid}/environ`, 'utf8');
      expect(environ).to.not.include(ADMIN_TOKEN);
      expect(environ).to.not.include(PAGE_TOKEN_SECRET);
      expect(environ).to.not.include('PRIVATE KEY');
    }
  });
});

describe('gateway to pet service over mutual TLS by IP address, PET_SERVICE_ADDR an address the certificate holds or not', function () {
  this.timeout(60_000);
  let files: CertificateDirectory;
  let tls: MutualTlsEnv;
  let petService: ServiceProcess;
  const gateways: ServiceProcess[] = [];

  before(async () => {
    files = certificateDirectory();
    tls = writeMutualTlsFiles(files, ['pet-service', '127.0.0.1']);
    petService = await startService('pet-service', tls.petService);
  });

  afterEach(async () => {
    await Promise.all(gateways.splice(0).map((gateway) => gateway.stop()));
  });

  after(async () => {
    await petService?.stop();
    files?.remove();
  });

  async function gatewayTo(address: string): Promise<{ baseUrl: string; readyz: string }> {
    const gateway = await startService('gateway', { PET_SERVICE_ADDR: address, ...tls.gateway });
    gateways.push(gateway);
    return { baseUrl: `http://127.0.0.1:${gateway.port}`, readyz: `http://127.0.0.1:${gateway.adminPort}/readyz` };
  }

  it('is ready and serves with 127.0.0.1 and dns:///127.0.0.1, an IP SAN of the pet service’s certificate', async () => {
    for (const address of [`127.0.0.1:${petService.port}`, `dns:///127.0.0.1:${petService.port}`]) {
      const gateway = await gatewayTo(address);
      const ready = await fetch(gateway.readyz);
      expect(ready.status, `${address}: ${JSON.stringify(await ready.clone().json())}`).to.equal(200);
      const created = await fetch(`${gateway.baseUrl}/v1/pets`, {
        method: 'POST',
        headers: { ...DEMO_KEY, 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: 'Rex', categoryId: 1 }),
      });
      expect(created.status, address).to.equal(201);
      const { id } = (await created.json()) as { id: string };
      expect((await fetch(`${gateway.baseUrl}/v1/pets/${id}`, { headers: DEMO_KEY })).status, address).to.equal(200);
    }
  });

  it('is not ready, and answers 503, at an address the certificate does not hold; /readyz says why', async () => {
    // The pet service listens on every address, so 127.0.0.2 reaches it, under a certificate for 127.0.0.1.
    const gateway = await gatewayTo(`127.0.0.2:${petService.port}`);
    const ready = await fetch(gateway.readyz);
    const body = (await ready.json()) as { status: string; checks: Record<string, string> };
    expect(ready.status).to.equal(503);
    expect(body.checks.petService).to.include(
      "the server's certificate does not hold the IP address 127.0.0.2 (its subject alternative names: DNS:pet-service, IP Address:127.0.0.1)",
    );
    const listed = await fetch(`${gateway.baseUrl}/v1/pets`, { headers: DEMO_KEY });
    expect(listed.status).to.equal(503);
    expect(await listed.json()).to.include({ status: 503 });
  });
});
