import { open, readFile, realpath } from 'node:fs/promises';
import { dirname } from 'node:path';
import { lock } from 'proper-lockfile';
import writeFileAtomic from 'write-file-atomic';
import { Document, parseDocument } from 'yaml';
import { ApiKeyStore } from './api-keys';

/** An edit that would leave a keys file the gateway rejects; nothing was written. */
export class RejectedEditError extends Error {}

/**
 * How long a command waits for another to finish with the file: long enough for a burst of
 * commands run at once (each holds the lock for a read, a parse and an fsync), short enough that
 * an operator is told. A lock whose holder died is taken over after `stale` (proper-lockfile).
 */
const LOCK_OPTIONS = {
  stale: 10_000,
  realpath: false,
  retries: { retries: 100, factor: 1.3, minTimeout: 10, maxTimeout: 250, randomize: true },
};

/**
 * Changes the keys file at `path` under a lock, so that concurrent commands each see the others'
 * changes and none is lost. `edit` changes the YAML document in place (comments, and entries and
 * fields this version does not know, are kept as they are) and may throw to change nothing; it is
 * given the file as the gateway reads it. A missing file is an empty list of keys.
 *
 * The result is written only if the gateway would load it, atomically: a temporary file in the
 * same directory, fsync, rename over the file, fsync of the directory, so that a gateway, or a
 * crash, sees the old file or the new one and never a part. A JSON file stays JSON.
 * @throws RejectedEditError when the edited file would be rejected; Error when the file as found is.
 */
export async function editKeysFile<T>(path: string, edit: (document: Document, store: ApiKeyStore) => T): Promise<T> {
  let release: () => Promise<void>;
  try {
    release = await lock(path, { ...LOCK_OPTIONS, lockfilePath: `${path}.lock` });
  } catch (error) {
    throw new Error(`${path}: another keys command holds ${path}.lock (${(error as Error).message}); try again`, { cause: error });
  }
  try {
    const text = await readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return 'keys: []\n';
      throw error;
    });
    let store: ApiKeyStore;
    try {
      store = ApiKeyStore.parse(text, path);
    } catch (error) {
      throw new Error(`refusing to edit a file the gateway rejects: ${(error as Error).message}`, { cause: error });
    }
    const document = parseDocument(text);
    const result = edit(document, store);
    const edited = path.endsWith('.json') ? `${JSON.stringify(document.toJS(), null, 2)}\n` : document.toString();
    try {
      ApiKeyStore.parse(edited, path);
    } catch (error) {
      throw new RejectedEditError(`not written, the gateway would reject it: ${(error as Error).message}`, { cause: error });
    }
    await writeFileAtomic(path, edited, { fsync: true });
    await syncDirectory(dirname(await realpath(path)));
    return result;
  } finally {
    await release();
  }
}

/** Makes a rename in `directory` durable: without it, a crash may bring back the old file. */
async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
