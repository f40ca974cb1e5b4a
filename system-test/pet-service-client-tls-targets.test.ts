import { createServer as createHttpServer, type IncomingMessage } from 'node:http';
import { createSecureServer, type Http2SecureServer } from 'node:http2';
import { type AddressInfo, connect as connectTcp } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { status as Status, type ServiceError } from '@grpc/grpc-js';
import { CertificateFiles, createPetServiceClient, type PetServiceClientOptions, PetStatus, type PromisePetServiceClient } from '@petstore/proto';
import { expect } from 'chai';
import { createServer, type RunningServer } from '../pet-service/src/server';
import { MemoryPetRepository } from '../pet-service/src/store/memory-pet-repository';
import { certificateDirectory, type CertificateDirectory, createTestCa, type TestCa } from './support/test-certificates';
import { waitFor } from './support/wait-for';

const LIST = { pageSize: 1, pageToken: '', status: PetStatus.PET_STATUS_UNSPECIFIED };

describe('createPetServiceClient over mutual TLS to a name or an IP address', function () {
  this.timeout(30_000);
  let ca: TestCa;
  let files: CertificateDirectory;
  const servers: Array<{ shutdown(): Promise<void> }> = [];
  const clients: PromisePetServiceClient[] = [];

  before(() => {
    ca = createTestCa();
    files = certificateDirectory();
    files.write('ca.crt', ca.cert);
    const gateway = ca.issue('gateway', { use: 'client' });
    files.write('gateway.crt', gateway.cert);
    files.write('gateway.key', gateway.key);
  });

  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    await Promise.all(servers.splice(0).map((server) => server.shutdown()));
  });

  after(() => files.remove());

  /** A pet service requiring client certificates on `host`, its certificate holding `names`. */
  async function petService(host: string, names: readonly string[]): Promise<RunningServer> {
    const issued = ca.issue('pet-service', { names });
    const prefix = `pet-service-${servers.length}`;
    const certificates = new CertificateFiles({ certFile: files.write(`${prefix}.crt`, issued.cert), keyFile: files.write(`${prefix}.key`, issued.key), caFile: `${files.path}/ca.crt` });
    const server = await createServer({ host, port: 0, repository: new MemoryPetRepository(), pageTokenSecret: 's', tls: { certificates, requireClientCertificate: true } });
    servers.push({
      shutdown: async () => {
        await server.shutdown();
        certificates.close();
      },
    });
    return server;
  }

  function client(target: string, more: Pick<PetServiceClientOptions, 'serverNameOverride' | 'transportOptions'> = {}): PromisePetServiceClient {
    const made = createPetServiceClient(target, {
      tls: { caFile: `${files.path}/ca.crt`, certFile: `${files.path}/gateway.crt`, keyFile: `${files.path}/gateway.key` },
      retryReads: false,
      ...more,
    });
    clients.push(made);
    return made;
  }

  async function failure(call: Promise<unknown>): Promise<ServiceError> {
    try {
      await call;
    } catch (error) {
      return error as ServiceError;
    }
    return expect.fail('the call succeeded');
  }

  it('serves an IPv4 address target, bare, dns:/// and ipv4:, checked against the certificate’s IP SAN; and a name target as before', async () => {
    const { port } = await petService('127.0.0.1', ['localhost', '127.0.0.1']);
    for (const target of [`127.0.0.1:${port}`, `dns:///127.0.0.1:${port}`, `ipv4:127.0.0.1:${port}`, `localhost:${port}`, `dns:///localhost:${port}`]) {
      const pets = client(target);
      const created = await pets.createPet({ name: 'Rex', categoryId: '1', status: PetStatus.PET_STATUS_AVAILABLE });
      expect((await pets.getPet({ id: created.pet!.id })).pet?.name, target).to.equal('Rex');
    }
  });

  it('serves an IPv6 address target, bracketed, dns:/// and ipv6:, checked against the certificate’s IP SAN', async () => {
    const { port } = await petService('::1', ['::1']);
    for (const target of [`[::1]:${port}`, `dns:///[::1]:${port}`, `ipv6:[::1]:${port}`]) {
      expect((await client(target).listPets(LIST)).pets, target).to.deep.equal([]);
    }
  });

  it('refuses a pet service whose certificate does not hold the address (or the name), saying which and what it holds', async () => {
    const byNameOnly = await petService('127.0.0.1', ['localhost']);
    const otherAddress = await petService('127.0.0.1', ['127.0.0.2']);
    for (const [port, held] of [
      [byNameOnly.port, 'DNS:localhost'],
      [otherAddress.port, 'IP Address:127.0.0.2'],
    ] as const) {
      for (const target of [`127.0.0.1:${port}`, `dns:///127.0.0.1:${port}`]) {
        const error = await failure(client(target).listPets(LIST));
        expect(error.code, target).to.equal(Status.UNAVAILABLE);
        expect(error.details, target).to.include(`ERR_TLS_CERT_ALTNAME_INVALID]: the server's certificate does not hold the IP address 127.0.0.1 (its subject alternative names: ${held})`);
      }
    }
    // The same certificate by the name it holds: served.
    expect((await client(`localhost:${byNameOnly.port}`).listPets(LIST)).pets).to.deep.equal([]);
    // A name the certificate does not hold is refused as before, and said the same way.
    const error = await failure(client(`localhost:${otherAddress.port}`).listPets(LIST));
    expect(error.code).to.equal(Status.UNAVAILABLE);
    expect(error.details).to.include("the server's certificate does not hold the name localhost (its subject alternative names: IP Address:127.0.0.2)");
  });

  it('through an HTTP CONNECT proxy, checks the address or name of the pet service, not of the proxy', async () => {
    const { port } = await petService('127.0.0.1', ['localhost', '127.0.0.1']);
    const tunnelled: string[] = [];
    const proxy = createHttpServer().on('connect', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      tunnelled.push(request.url!);
      const [host, upstreamPort] = request.url!.split(':');
      const upstream = connectTcp(Number(upstreamPort), host, () => {
        socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.write(head);
        upstream.pipe(socket).pipe(upstream);
      });
      upstream.on('error', () => socket.destroy());
      socket.on('error', () => upstream.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    servers.push({ shutdown: () => new Promise((resolve) => proxy.close(() => resolve())) });
    const proxyPort = (proxy.address() as AddressInfo).port;
    // The transport tunnels to the target through the proxy, as it does for a proxy set in the environment.
    for (const [proxyAddress, real] of [
      [`localhost:${proxyPort}`, `dns:///127.0.0.1:${port}`],
      [`127.0.0.1:${proxyPort}`, `dns:///localhost:${port}`],
    ]) {
      tunnelled.length = 0;
      expect((await client(real!, { transportOptions: { proxy: proxyAddress! } }).listPets(LIST)).pets, real).to.deep.equal([]);
      expect(tunnelled, real).to.include(real!.replace('dns:///', ''));
    }
  });

  describe('SNI', () => {
    let server: Http2SecureServer;
    /** The server name each handshake asked for (false: none). */
    const asked: Array<TLSSocket['servername']> = [];

    before(async () => {
      const issued = ca.issue('sni-probe');
      server = createSecureServer({ cert: issued.cert, key: issued.key, ca: ca.cert, requestCert: true, rejectUnauthorized: true, allowHTTP1: false });
      server.on('secureConnection', (socket: TLSSocket) => asked.push(socket.servername));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    });

    after(() => new Promise<void>((resolve) => server.close(() => resolve())));

    /** What a new client's first handshake with the probe asked for. */
    async function sniOf(target: (port: number) => string, serverNameOverride?: string): Promise<TLSSocket['servername']> {
      asked.length = 0;
      const { transport } = client(target((server.address() as AddressInfo).port), serverNameOverride === undefined ? {} : { serverNameOverride });
      transport.state(true);
      await waitFor(() => asked.length > 0, 5000, () => `transport ${transport.state()}`);
      return asked[0]!;
    }

    it('is the name for a name target, none for an address, and the override where serverNameOverride is set', async () => {
      expect(await sniOf((port) => `localhost:${port}`)).to.equal('localhost');
      expect(await sniOf((port) => `127.0.0.1:${port}`)).to.equal(false);
      expect(await sniOf((port) => `dns:///127.0.0.1:${port}`)).to.equal(false);
      expect(await sniOf((port) => `127.0.0.1:${port}`, 'localhost')).to.equal('localhost');
    });
  });
});
