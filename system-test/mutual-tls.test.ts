import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { startProcessStack, type ProcessStack } from './support/process-stack';
import { certificateDirectory, type CertificateDirectory, createTestCa } from './support/test-certificates';

const ADMIN_TOKEN = 'an-admin-token-from-a-file';
const PAGE_TOKEN_SECRET = 'a-page-token-secret-from-a-file';
const DEMO_KEY = { Authorization: 'Bearer demo-free-key-0000' };

describe('gateway to pet service over mutual TLS, secrets from files, as the manifests run them', function () {
  this.timeout(60_000);
  let files: CertificateDirectory;
  let stack: ProcessStack;

  before(async () => {
    files = certificateDirectory();
    const ca = createTestCa();
    const server = ca.issue('pet-service');
    const gateway = ca.issue('gateway', { use: 'client' });
    files.write('ca.crt', ca.cert);
    files.write('tls.crt', server.cert);
    files.write('tls.key', server.key);
    files.write('gateway.crt', gateway.cert);
    files.write('gateway.key', gateway.key);
    files.write('admin-token', `${ADMIN_TOKEN}\n`);
    files.write('page-token-secret', `${PAGE_TOKEN_SECRET}\n`);
    stack = await startProcessStack({
      petService: {
        GRPC_TLS_CERT_FILE: `${files.path}/tls.crt`,
        GRPC_TLS_KEY_FILE: `${files.path}/tls.key`,
        GRPC_TLS_CLIENT_CA_FILE: `${files.path}/ca.crt`,
        PAGE_TOKEN_SECRET_FILE: `${files.path}/page-token-secret`,
        LOG_SLOW_CALL_MS: '0',
      },
      gateway: {
        PET_SERVICE_TLS_CA_FILE: `${files.path}/ca.crt`,
        PET_SERVICE_TLS_CERT_FILE: `${files.path}/gateway.crt`,
        PET_SERVICE_TLS_KEY_FILE: `${files.path}/gateway.key`,
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
