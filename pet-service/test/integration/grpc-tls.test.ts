import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect as tlsConnect } from 'node:tls';
import { credentials, Metadata, type ServiceError, status as Status } from '@grpc/grpc-js';
import { CertificateFiles, createPetServiceClient, PetServiceClient, PetStatus, type PromisePetServiceClient } from '@petstore/proto';
import { ExportResultCode } from '@opentelemetry/core';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { createTracing, type Tracing, TRACING_ENV, tracingSettings } from '@petstore/runtime';
import { expect } from 'chai';
import { cleanEnv } from 'envalid';
import { capturedLogs } from '../../../system-test/support/captured-logs';
import { certificateDirectory, type CertificateDirectory, createTestCa, notAfterSeconds, type TestCa } from '../../../system-test/support/test-certificates';
import { waitFor } from '../../../system-test/support/wait-for';
import { REFUSAL_LOG_INTERVAL_MS } from '../../src/grpc/tls-listener';
import { createMetrics, type PetServiceMetrics } from '../../src/observability/metrics';
import { createServer, type RunningServer } from '../../src/server';
import { MemoryPetRepository } from '../../src/store/memory-pet-repository';

/** How often the certificate files are read again in these tests: rotations show within it. */
const RELOAD_MS = 50;

describe('pet service over mutual TLS: real handshakes with certificates made by the test', function () {
  this.timeout(30_000);
  let ca: TestCa;
  let otherCa: TestCa;
  let files: CertificateDirectory;
  let server: RunningServer;
  let metrics: PetServiceMetrics;
  let lines: Array<Record<string, unknown>>;
  let serverCertificates: CertificateFiles;
  let tracing: Tracing;
  /** The refusal log's clock, in ms. */
  let clock = 0;
  const spans: ReadableSpan[] = [];
  const clients: Array<{ close(): void }> = [];
  const target = (): string => `localhost:${server.port}`;

  before(() => {
    ca = createTestCa();
    otherCa = createTestCa('another CA');
  });

  beforeEach(async () => {
    files = certificateDirectory();
    const serverCert = ca.issue('pet-service');
    files.write('ca.crt', ca.cert);
    files.write('tls.crt', serverCert.cert);
    files.write('tls.key', serverCert.key);
    const gateway = ca.issue('gateway', { use: 'client', uri: 'spiffe://petstore/gateway' });
    files.write('gateway.crt', gateway.cert);
    files.write('gateway.key', gateway.key);
    const logs = capturedLogs('info');
    lines = logs.lines;
    metrics = createMetrics();
    spans.length = 0;
    tracing = createTracing(tracingSettings(cleanEnv({ OTEL_BSP_SCHEDULE_DELAY: '1' }, TRACING_ENV), 'pet-service'), {
      exporter: {
        export: (batch, done) => {
          spans.push(...batch);
          done({ code: ExportResultCode.SUCCESS });
        },
        shutdown: () => Promise.resolve(),
      },
    });
    serverCertificates = new CertificateFiles({
      certFile: `${files.path}/tls.crt`,
      keyFile: `${files.path}/tls.key`,
      caFile: `${files.path}/ca.crt`,
      reloadIntervalMs: RELOAD_MS,
      onReject: (error) => logs.logger.error({ reason: error.message }, 'gRPC TLS files rejected; the last good certificates stay in force'),
    });
    server = await createServer({
      host: '127.0.0.1',
      port: 0,
      repository: new MemoryPetRepository(),
      pageTokenSecret: 's',
      logger: logs.logger,
      metrics,
      slowCallMs: 0,
      tracer: tracing.tracer,
      tls: { certificates: serverCertificates, requireClientCertificate: true, now: () => clock },
    });
  });

  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    await server.shutdown();
    await tracing.shutdown();
    files.remove();
  });

  /** A client as an internal caller makes one: `createPetServiceClient` with PEM files. */
  function tlsClient(cert = 'gateway', extra: { reloadIntervalMs?: number } = {}): PromisePetServiceClient {
    const client = createPetServiceClient(target(), {
      tls: {
        caFile: `${files.path}/ca.crt`,
        ...(cert === '' ? {} : { certFile: `${files.path}/${cert}.crt`, keyFile: `${files.path}/${cert}.key` }),
        ...extra,
      },
      retryReads: false,
    });
    clients.push(client);
    return client;
  }

  /** A bare grpc-js client with whatever certificate the test hands it, checked by nothing on this side. */
  function rawClient(key: string | undefined, cert: string | undefined): PetServiceClient {
    const client = new PetServiceClient(
      target(),
      credentials.createSsl(Buffer.from(ca.cert), key === undefined ? null : Buffer.from(key), cert === undefined ? null : Buffer.from(cert)),
    );
    clients.push(client);
    return client;
  }

  function listWith(client: PetServiceClient): Promise<ServiceError | undefined> {
    return new Promise((resolve) => {
      client.listPets({ pageSize: 1, pageToken: '', status: PetStatus.PET_STATUS_UNSPECIFIED }, new Metadata(), { deadline: Date.now() + 3000 }, (error) =>
        resolve(error ?? undefined),
      );
    });
  }

  const refusals = (): Array<Record<string, unknown>> => lines.filter((line) => line.msg === 'TLS handshake refused');
  const refusalCount = async (reason: string): Promise<number> =>
    (await metrics.tlsHandshakeRefusals.get()).values.find((value) => value.labels.reason === reason)?.value ?? 0;

  /** The serial number of the certificate a new TLS connection to the server is shown (as the gateway). */
  function servedSerial(): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = tlsConnect(
        { host: 'localhost', port: server.port, ca: ca.cert, cert: readFileSync(`${files.path}/gateway.crt`), key: readFileSync(`${files.path}/gateway.key`), ALPNProtocols: ['h2'] },
        () => {
          resolve(socket.getPeerCertificate().serialNumber);
          socket.destroy();
        },
      );
      socket.on('error', reject);
    });
  }

  it('serves a caller with a good client certificate, and logs and traces who it was', async () => {
    const client = tlsClient();
    const created = await client.createPet({ name: 'Rex', categoryId: '7', status: PetStatus.PET_STATUS_UNSPECIFIED });
    expect((await client.getPet({ id: created.pet!.id })).pet?.name).to.equal('Rex');
    const call = lines.find((line) => line.msg === 'grpc call' && line.method === 'GetPet')!;
    expect(call.peerSubject).to.equal('CN=gateway, O=petstore tests');
    expect(call.peerSan).to.equal('DNS:gateway, URI:spiffe://petstore/gateway');
    await waitFor(() => spans.some((span) => span.name === 'petstore.v1.PetService/GetPet'), 5000);
    expect(spans.find((span) => span.name === 'petstore.v1.PetService/GetPet')!.attributes).to.include({
      'tls.client.subject': 'CN=gateway, O=petstore tests',
      'petstore.tls.client.subject_alt_name': 'DNS:gateway, URI:spiffe://petstore/gateway',
    });
    expect(refusals()).to.deep.equal([]);
  });

  it('refuses a caller without a certificate, with one from another CA, with an expired one, and in plaintext; logs each peer once per reason, not per call', async () => {
    const expired = ca.issue('expired-client', { use: 'client', from: new Date(Date.now() - 3 * 86_400_000), validDays: 1 });
    const foreign = otherCa.issue('foreign-client', { use: 'client' });
    const cases: Array<[string, string | undefined, string | undefined]> = [
      ['no certificate', undefined, undefined],
      ['another CA', foreign.key, foreign.cert],
      ['expired', expired.key, expired.cert],
    ];
    // A client per call: each makes its own connection, so each call is a handshake refused.
    for (const [name, key, cert] of cases) {
      for (let call = 0; call < 3; call += 1) {
        const error = await listWith(rawClient(key, cert));
        expect(error?.code, `${name}, call ${call}`).to.equal(Status.UNAVAILABLE);
      }
    }
    // A plaintext caller: its HTTP/2 preface is no TLS handshake.
    const plaintext = new PetServiceClient(target(), credentials.createInsecure());
    clients.push(plaintext);
    expect((await listWith(plaintext))?.code).to.equal(Status.UNAVAILABLE);
    expect(await refusalCount('protocol_mismatch'), JSON.stringify((await metrics.tlsHandshakeRefusals.get()).values)).to.be.at.least(1);
    expect(await refusalCount('no_client_certificate'), JSON.stringify((await metrics.tlsHandshakeRefusals.get()).values)).to.equal(3);
    expect(await refusalCount('client_certificate_refused'), JSON.stringify(refusals()) + JSON.stringify((await metrics.tlsHandshakeRefusals.get()).values)).to.equal(6);
    const logged = refusals();
    expect(logged.map((line) => line.reason), 'every peer here is 127.0.0.1: one line per reason, whatever the calls').to.have.members([
      'no_client_certificate',
      'client_certificate_refused',
      'protocol_mismatch',
    ]);
    for (const line of logged) expect(line).to.include({ peer: '127.0.0.1', level: 40 });
    // Ten minutes on, the same peer and reason is logged again, with the refusals held back since.
    clock += REFUSAL_LOG_INTERVAL_MS;
    await listWith(rawClient(undefined, undefined));
    await waitFor(() => refusals().length === 4, 5000);
    expect(refusals()[3]).to.include({ peer: '127.0.0.1', reason: 'no_client_certificate', refusalsSinceLastLine: 3 });
    // A call that was served by no handler is in no call log line.
    expect(lines.filter((line) => line.msg === 'grpc call')).to.deep.equal([]);
  });

  it('fails an internal caller without a certificate at once with UNAVAILABLE, and refuses bad client settings when the client is made', async () => {
    const client = createPetServiceClient(target(), { tls: { caFile: `${files.path}/ca.crt` }, retryReads: false });
    clients.push(client);
    const started = Date.now();
    const error = (await client.listPets({ pageSize: 1, pageToken: '', status: PetStatus.PET_STATUS_UNSPECIFIED }).catch((caught: unknown) => caught)) as ServiceError;
    expect(error.code).to.equal(Status.UNAVAILABLE);
    expect(Date.now() - started, 'not the whole deadline').to.be.below(1500);
    const expired = ca.issue('expired', { use: 'client', from: new Date(Date.now() - 3 * 86_400_000), validDays: 1 });
    files.write('expired.crt', expired.cert);
    files.write('expired.key', expired.key);
    const made = (tls: object): unknown => {
      try {
        createPetServiceClient(target(), { tls }).close();
        return undefined;
      } catch (caught) {
        return caught;
      }
    };
    expect(made({ certFile: `${files.path}/gateway.crt`, keyFile: `${files.path}/gateway.key` })).to.include({ name: 'CertificateFilesError', file: 'caFile' });
    expect(made({ caFile: `${files.path}/ca.crt`, certFile: `${files.path}/gateway.crt` })).to.include({ file: 'keyFile' });
    expect(made({ caFile: `${files.path}/ca.crt`, certFile: `${files.path}/gateway.crt`, keyFile: `${files.path}/tls.key` }))
      .to.have.property('message')
      .that.matches(/tls\.key: .*key values mismatch \(with .*gateway\.crt\)$/);
    expect(made({ caFile: `${files.path}/ca.crt`, certFile: `${files.path}/expired.crt`, keyFile: `${files.path}/expired.key` }))
      .to.have.property('message')
      .that.matches(/expired\.crt: the certificate expired on /);
    expect(made({ caFile: `${files.path}/missing.crt` })).to.have.property('message').that.matches(/cannot read .*missing\.crt: ENOENT$/);
    expect(() => createPetServiceClient(target(), { tls: { caFile: `${files.path}/ca.crt` }, credentials: credentials.createInsecure() } as never)).to.throw(RangeError, /credentials and tls/);
  });

  it('uses a server certificate rotated on disk for new connections, without a restart, while calls keep flowing', async () => {
    const client = tlsClient();
    const before = await servedSerial();
    let served = 0;
    let failed = 0;
    let running = true;
    const traffic = (async () => {
      while (running) {
        try {
          await client.listPets({ pageSize: 1, pageToken: '', status: PetStatus.PET_STATUS_UNSPECIFIED });
          served += 1;
        } catch {
          failed += 1;
        }
      }
    })();
    await waitFor(() => served >= 20, 10_000);
    const expirations = async (): Promise<Record<string, number>> =>
      Object.fromEntries((await metrics.registry.getSingleMetric('tls_certificate_expiration_timestamp_seconds')!.get()).values.map(({ labels, value }) => [labels.certificate, value]));
    expect(await expirations(), 'the expiry gauge before').to.deep.equal({ own: notAfterSeconds(readFileSync(`${files.path}/tls.crt`, 'utf8')), ca: notAfterSeconds(ca.cert) });
    // Valid a day longer than the first, so that the gauge's change is the rotation's.
    const rotated = ca.issue('pet-service', { validDays: 2 });
    // Key first, then certificate: a reader in between sees a mismatched pair, which must not be put in force.
    files.write('tls.key', rotated.key);
    files.write('tls.crt', rotated.cert);
    const newSerial = new X509Certificate(rotated.cert).serialNumber;
    await waitFor(async () => (await servedSerial()) === newSerial, 10_000);
    const servedAtRotation = served;
    await waitFor(() => served >= servedAtRotation + 20, 10_000);
    running = false;
    await traffic;
    expect(before).to.not.equal(newSerial);
    expect(failed, 'calls failed while the certificate was rotated').to.equal(0);
    expect(served).to.be.greaterThan(40);
    // A fresh caller connects and is served under the new certificate.
    await tlsClient().listPets({ pageSize: 1, pageToken: '', status: PetStatus.PET_STATUS_UNSPECIFIED });
    expect(lines.filter((line) => line.msg === 'gRPC TLS certificates reloaded; new connections use them')).to.have.length(1);
    expect(await expirations(), 'the expiry gauge after').to.deep.equal({ own: notAfterSeconds(rotated.cert), ca: notAfterSeconds(ca.cert) });
  });

  it('keeps the last good certificate when the files on disk are not a pair, and says so once', async () => {
    const stray = ca.issue('pet-service');
    files.write('tls.key', stray.key);
    await waitFor(() => lines.some((line) => line.msg === 'gRPC TLS files rejected; the last good certificates stay in force'), 10_000);
    // Further reads of the same content say nothing more.
    await serverCertificates.reload();
    await serverCertificates.reload();
    expect(lines.filter((line) => line.msg === 'gRPC TLS files rejected; the last good certificates stay in force')).to.have.length(1);
    expect(String(lines.find((line) => line.level === 50)!.reason)).to.match(/key values mismatch/);
    await tlsClient().listPets({ pageSize: 1, pageToken: '', status: PetStatus.PET_STATUS_UNSPECIFIED });
    files.write('tls.crt', stray.cert);
    await waitFor(() => lines.some((line) => line.msg === 'gRPC TLS certificates reloaded; new connections use them'), 10_000);
    await tlsClient().listPets({ pageSize: 1, pageToken: '', status: PetStatus.PET_STATUS_UNSPECIFIED });
  });
});
