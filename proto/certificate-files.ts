import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createSecureContext } from 'node:tls';

/** PEM files of one side of a TLS connection. */
export interface CertificateFilePaths {
  /** The CA bundle the peer's certificate must chain to. */
  readonly caFile?: string | undefined;
  /** The certificate chain this side presents (leaf first), with {@link keyFile}. */
  readonly certFile?: string | undefined;
  /** The private key of {@link certFile}. */
  readonly keyFile?: string | undefined;
}

/** Settings of {@link CertificateFiles}. */
export interface CertificateFilesOptions extends CertificateFilePaths {
  /** How often the files are read again, in ms. Default {@link DEFAULT_RELOAD_INTERVAL_MS}. */
  readonly reloadIntervalMs?: number;
  /** Told once of each new set of files put in force (not of the first). */
  readonly onReload?: (certificates: Certificates) => void;
  /** Told once of each content of the files that could not be used; the last good set stays in force. */
  readonly onReject?: (error: CertificateFilesError) => void;
  /** Milliseconds since the epoch, for the expiry check (tests). */
  readonly now?: () => number;
}

/** The PEM contents in force. */
export interface Certificates {
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
  /** When the presented certificate expires (ms since the epoch), if there is one. */
  readonly notAfter?: number;
  /** When the CA file's first certificate expires (ms since the epoch), if there is a CA file. */
  readonly caNotAfter?: number;
  /** The presented certificate's subject, as OpenSSL prints it, if there is one. */
  readonly subject?: string;
}

/** Which file a problem is about: the service names the variable that set it. */
export type CertificateFile = 'caFile' | 'certFile' | 'keyFile';

/** Certificate files that cannot be used, naming the file at fault. */
export class CertificateFilesError extends Error {
  constructor(
    readonly file: CertificateFile,
    problem: string,
  ) {
    super(problem);
    this.name = 'CertificateFilesError';
  }
}

/**
 * Files are read again this often. cert-manager renews a certificate well before it expires (at
 * two thirds of its life by default) and the kubelet takes up to a minute or two to update a
 * mounted Secret, so seconds are plenty; three small files read every 5 s cost nothing.
 */
export const DEFAULT_RELOAD_INTERVAL_MS = 5000;

/**
 * A CA bundle and a certificate with its key, read from PEM files at construction and read again
 * every `reloadIntervalMs`, so that a certificate rotated on disk (by cert-manager and the kubelet,
 * which swap a Secret volume's files in place) is used for new connections without a restart.
 * Connections already made keep the certificates they were made with.
 *
 * A new content is put in force only once it is whole and consistent: every file readable, the
 * certificate and key a pair, the CA and certificate parseable, the certificate not expired. Any
 * other content (a file half written, a key from one rotation and a certificate from the next,
 * a file gone) is reported once through `onReject` and the last good set stays in force, so a
 * bad rotation never takes away credentials that worked. (grpc-js's own
 * `FileWatcherCertificateProvider` replaces them with none; docs/decisions.md.)
 *
 * Its users read {@link current} for each new connection (the client's transport) and follow
 * {@link onChange} (the pet service's TLS listener, which sets its secure context).
 */
export class CertificateFiles {
  private readonly paths: CertificateFilePaths;
  private readonly onReload: (certificates: Certificates) => void;
  private readonly onReject: (error: CertificateFilesError) => void;
  private readonly now: () => number;
  private readonly changeListeners = new Set<(certificates: Certificates) => void>();
  private readonly timer: NodeJS.Timeout;
  private inForce: Certificates;
  /** The raw content last read, good or bad, so that a bad one is reported once. */
  private lastRead: string;
  private reading = false;

  /**
   * Reads the files now.
   * @throws CertificateFilesError when they cannot be used, naming the file at fault.
   */
  constructor(options: CertificateFilesOptions) {
    const { caFile, certFile, keyFile } = options;
    if ((certFile === undefined) !== (keyFile === undefined)) {
      throw new CertificateFilesError(certFile === undefined ? 'certFile' : 'keyFile', 'a certificate and its key go together: give both files');
    }
    if (caFile === undefined && certFile === undefined) throw new CertificateFilesError('caFile', 'no file given');
    this.paths = { caFile, certFile, keyFile };
    this.onReload = options.onReload ?? (() => undefined);
    this.onReject = options.onReject ?? (() => undefined);
    this.now = options.now ?? Date.now;
    const contents = this.readAll((path) => readFileSync(path));
    this.inForce = this.check(contents);
    this.lastRead = fingerprint(contents);
    this.timer = setInterval(() => void this.reload(), options.reloadIntervalMs ?? DEFAULT_RELOAD_INTERVAL_MS).unref();
  }

  /** The set in force. */
  get current(): Certificates {
    return this.inForce;
  }

  /**
   * Reads the files now and puts a new, good content in force (the timer does this too).
   * @returns whether the set in force changed.
   */
  async reload(): Promise<boolean> {
    if (this.reading) return false;
    this.reading = true;
    try {
      let contents: FileContents;
      try {
        contents = await this.readAllAsync();
      } catch (error) {
        return this.reject(`unreadable: ${(error as Error).message}`, error as CertificateFilesError);
      }
      const read = fingerprint(contents);
      if (read === this.lastRead) return false;
      let checked: Certificates;
      try {
        checked = this.check(contents);
      } catch (error) {
        return this.reject(read, error as CertificateFilesError);
      }
      this.lastRead = read;
      this.inForce = checked;
      this.onReload(checked);
      for (const listener of this.changeListeners) listener(checked);
      return true;
    } finally {
      this.reading = false;
    }
  }

  /** Calls `listener` with every new set put in force. */
  onChange(listener: (certificates: Certificates) => void): void {
    this.changeListeners.add(listener);
  }

  /** Stops reading the files. */
  close(): void {
    clearInterval(this.timer);
    this.changeListeners.clear();
  }

  private reject(read: string, error: CertificateFilesError): boolean {
    if (read !== this.lastRead) {
      this.lastRead = read;
      this.onReject(error);
    }
    return false;
  }

  private readAll(read: (path: string) => Buffer): FileContents {
    const contents: FileContents = {};
    for (const file of FILES) {
      const path = this.paths[file];
      if (path === undefined) continue;
      try {
        contents[file] = read(path);
      } catch (error) {
        throw new CertificateFilesError(file, `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
      }
    }
    return contents;
  }

  private async readAllAsync(): Promise<FileContents> {
    const contents: FileContents = {};
    await Promise.all(
      FILES.map(async (file) => {
        const path = this.paths[file];
        if (path === undefined) return;
        try {
          contents[file] = await readFile(path);
        } catch (error) {
          throw new CertificateFilesError(file, `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
        }
      }),
    );
    return contents;
  }

  /** The contents as a set to put in force. @throws CertificateFilesError */
  private check(contents: FileContents): Certificates {
    const { caFile, certFile, keyFile } = contents;
    const ca = caFile === undefined ? undefined : parseCertificate(caFile, 'caFile', this.paths.caFile!);
    let leaf: X509Certificate | undefined;
    if (certFile !== undefined) {
      leaf = parseCertificate(certFile, 'certFile', this.paths.certFile!);
      if (Date.parse(leaf.validTo) <= this.now()) throw new CertificateFilesError('certFile', `${this.paths.certFile}: the certificate expired on ${leaf.validTo}`);
    }
    try {
      createSecureContext({ ca: caFile, cert: certFile, key: keyFile });
    } catch (error) {
      const file: CertificateFile = keyFile === undefined ? 'caFile' : 'keyFile';
      throw new CertificateFilesError(file, `${this.paths[file]}: ${(error as Error).message}${file === 'keyFile' ? ` (with ${this.paths.certFile})` : ''}`);
    }
    return {
      ...(caFile === undefined ? {} : { ca: caFile }),
      ...(certFile === undefined || keyFile === undefined ? {} : { cert: certFile, key: keyFile }),
      ...(leaf === undefined ? {} : { notAfter: Date.parse(leaf.validTo), subject: leaf.subject.replace(/\n/g, ', ') }),
      ...(ca === undefined ? {} : { caNotAfter: Date.parse(ca.validTo) }),
    };
  }
}

const FILES: readonly CertificateFile[] = ['caFile', 'certFile', 'keyFile'];

type FileContents = { -readonly [file in CertificateFile]?: Buffer };

/** The first certificate of a PEM file. @throws CertificateFilesError */
function parseCertificate(pem: Buffer, file: CertificateFile, path: string): X509Certificate {
  try {
    return new X509Certificate(pem);
  } catch (error) {
    throw new CertificateFilesError(file, `${path}: not a PEM certificate (${(error as Error).message})`);
  }
}

/** The contents as one comparable string (they are small). */
function fingerprint(contents: FileContents): string {
  return FILES.map((file) => contents[file]?.toString('base64') ?? '-').join('|');
}

/**
 * When each certificate of `certificates` expires, in seconds since the epoch, for the gauge
 * `tls_certificate_expiration_timestamp_seconds{certificate}` of both services: `own` is the one
 * this process presents, `ca` the first of the CA file it checks peers against.
 */
export function certificateExpirations(certificates: Certificates | undefined): Array<{ certificate: 'own' | 'ca'; seconds: number }> {
  const expirations: Array<{ certificate: 'own' | 'ca'; seconds: number }> = [];
  if (certificates?.notAfter !== undefined) expirations.push({ certificate: 'own', seconds: certificates.notAfter / 1000 });
  if (certificates?.caNotAfter !== undefined) expirations.push({ certificate: 'ca', seconds: certificates.caNotAfter / 1000 });
  return expirations;
}

/** Help text of the expiry gauge, the same in both services. */
export const CERTIFICATE_EXPIRATION_HELP =
  'When a TLS certificate in force expires (Unix time), by certificate: own (the one this process presents), ca (the CA file its peers are checked against). Absent without TLS.';
