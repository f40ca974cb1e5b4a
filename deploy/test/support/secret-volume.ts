import { chmodSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A directory laid out as the kubelet lays out a Secret volume, to bind-mount into a container at
 * the Secret's mountPath: each file is a symlink `<name> -> ..data/<name>`, `..data` a symlink to a
 * timestamped directory holding the contents, and an update writes a new timestamped directory and
 * swaps `..data` with one rename (the kubelet's atomic writer). A reader that opens the path sees
 * the old file or the new one, never a mix, and the file's own inode never changes in place.
 */
export class SecretVolume {
  readonly path = mkdtempSync(join(tmpdir(), 'petstore-secret-'));
  private current: string | undefined;
  private version = 0;

  constructor(files: Readonly<Record<string, string>>) {
    // The kubelet's volume directory: world-readable, as the container's user is not its owner.
    chmodSync(this.path, 0o755);
    this.update(files);
    for (const name of Object.keys(files)) symlinkSync(join('..data', name), join(this.path, name));
  }

  /** Replaces every file at once, as the kubelet does when the Secret changes. */
  update(files: Readonly<Record<string, string>>): void {
    this.version += 1;
    const next = `..${new Date().toISOString().replace(/[-:.TZ]/g, '_')}${this.version}`;
    mkdirSync(join(this.path, next), { mode: 0o755 });
    // Secret volumes' defaultMode, 0644.
    for (const [name, content] of Object.entries(files)) writeFileSync(join(this.path, next, name), content, { mode: 0o644 });
    symlinkSync(next, join(this.path, '..data_tmp'));
    renameSync(join(this.path, '..data_tmp'), join(this.path, '..data'));
    if (this.current !== undefined) rmSync(join(this.path, this.current), { recursive: true });
    this.current = next;
  }

  remove(): void {
    rmSync(this.path, { recursive: true, force: true });
  }
}
