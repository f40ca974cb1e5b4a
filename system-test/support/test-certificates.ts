import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import forge from 'node-forge';

/** When certificate `pem` expires, in seconds since the epoch, as the services' expiry gauge gives it. */
export function notAfterSeconds(pem: string): number {
  return Date.parse(new X509Certificate(pem).validTo) / 1000;
}

/** A certificate and its key, PEM. */
export interface Issued {
  readonly cert: string;
  readonly key: string;
}

/** A certificate authority made for a test, which issues server and client certificates. */
export interface TestCa extends Issued {
  /**
   * A certificate for `commonName`, for a server (by default `localhost` and 127.0.0.1 as names) or a client.
   * `validDays` may be negative with `from` in the past for one that has expired.
   */
  issue(commonName: string, options?: IssueOptions): Issued;
}

export interface IssueOptions {
  readonly use?: 'server' | 'client';
  /** Start of validity (default an hour ago). */
  readonly from?: Date;
  /** Length of validity in days (default 1). */
  readonly validDays?: number;
  /** A URI SAN, such as a SPIFFE id. */
  readonly uri?: string;
  /**
   * A server's DNS names and IP addresses, each an IP SAN if it is an address (IPv4 or IPv6), else
   * a DNS SAN. Default `localhost` and 127.0.0.1.
   */
  readonly names?: readonly string[];
}

let serial = 1;

function keyPair(): { forgeKey: forge.pki.rsa.PrivateKey; publicKey: forge.pki.rsa.PublicKey; pem: string } {
  // Node makes the key (fast, native); node-forge only assembles and signs the certificate.
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const forgeKey = forge.pki.privateKeyFromPem(pem) as forge.pki.rsa.PrivateKey;
  return { forgeKey, publicKey: forge.pki.setRsaPublicKey(forgeKey.n, forgeKey.e), pem };
}

function certificate(subject: string, publicKey: forge.pki.PublicKey, from: Date, validDays: number): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = publicKey;
  serial += 1;
  cert.serialNumber = `01${serial.toString(16).padStart(8, '0')}`;
  cert.validity.notBefore = from;
  cert.validity.notAfter = new Date(from.getTime() + validDays * 86_400_000);
  cert.setSubject([
    { name: 'commonName', value: subject },
    { name: 'organizationName', value: 'petstore tests' },
  ]);
  return cert;
}

/** A new CA, valid for `validDays` (default 1) from an hour ago; `name` is its common name. */
export function createTestCa(name = 'petstore test CA', validDays = 1): TestCa {
  const caKey = keyPair();
  const caCert = certificate(name, caKey.publicKey, new Date(Date.now() - 3_600_000), validDays);
  caCert.setIssuer(caCert.subject.attributes);
  caCert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  caCert.sign(caKey.forgeKey, forge.md.sha256.create());
  return {
    cert: forge.pki.certificateToPem(caCert),
    key: caKey.pem,
    issue(commonName, options = {}) {
      const leafKey = keyPair();
      const leaf = certificate(commonName, leafKey.publicKey, options.from ?? new Date(Date.now() - 3_600_000), options.validDays ?? 1);
      leaf.setIssuer(caCert.subject.attributes);
      const server = (options.use ?? 'server') === 'server';
      const altNames: Array<{ type: number; value?: string; ip?: string }> = server
        ? (options.names ?? ['localhost', '127.0.0.1']).map((name) => (isIP(name) === 0 ? { type: 2, value: name } : { type: 7, ip: name }))
        : [{ type: 2, value: commonName }];
      if (options.uri !== undefined) altNames.push({ type: 6, value: options.uri });
      leaf.setExtensions([
        { name: 'basicConstraints', cA: false },
        { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
        { name: 'extKeyUsage', serverAuth: server, clientAuth: !server },
        { name: 'subjectAltName', altNames },
        { name: 'authorityKeyIdentifier', keyIdentifier: caCert.generateSubjectKeyIdentifier().getBytes() },
      ]);
      leaf.sign(caKey.forgeKey, forge.md.sha256.create());
      return { cert: forge.pki.certificateToPem(leaf), key: leafKey.pem };
    },
  };
}

/** A private directory of PEM files for one suite, removed by {@link CertificateDirectory.remove}. */
export interface CertificateDirectory {
  readonly path: string;
  /** Writes `content` to `name` in the directory (in place, as an edit would), returning its path. */
  write(name: string, content: string): string;
  remove(): void;
}

export function certificateDirectory(): CertificateDirectory {
  const path = mkdtempSync(join(tmpdir(), 'petstore-tls-'));
  return {
    path,
    write(name, content) {
      const file = join(path, name);
      writeFileSync(file, content, { mode: 0o600 });
      return file;
    },
    remove: () => rmSync(path, { recursive: true, force: true }),
  };
}
