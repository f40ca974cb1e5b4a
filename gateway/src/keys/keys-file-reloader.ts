import { type FSWatcher, readFileSync, watch } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import { type ApiKey, type ApiKeyDirectory, ApiKeyStore, type KeyRefusal, sha256Hex } from './api-keys';
import type { GatewayMetrics } from '../observability/metrics';

/** The keys in force, following the keys file as it changes. */
export interface KeysFileReloader extends ApiKeyDirectory {
  /** The store in force now. */
  current(): ApiKeyStore;
  /**
   * Reads the file now, and puts it in force if it is valid; a rejected file is logged and the
   * last good keys stay. Unchanged content is skipped unless `force` (SIGHUP forces).
   * @returns whether the keys in force were replaced.
   */
  reload(trigger: string, force?: boolean): boolean;
  /** Stops watching. */
  close(): void;
}

export interface KeysFileReloaderOptions {
  readonly path: string;
  /** The store read at start-up (from `path`), which stays in force until a good change. */
  readonly initial: ApiKeyStore;
  readonly logger: Logger;
  readonly metrics?: Pick<GatewayMetrics, 'apiKeysLoaded' | 'apiKeysReloads' | 'apiKeysLastReloadSuccess' | 'apiKeysLastReloadSuccessful'>;
  /** How often the file is read as well (see below). */
  readonly pollIntervalMs?: number;
  /** Changes seen within this long are read once, so a file being written is not read half done. */
  readonly settleMs?: number;
  /** Milliseconds since the epoch, for the last-reload metric. */
  readonly now?: () => number;
}

/**
 * Keeps the keys of the file at `path` in force, reloading it when it changes, by two means:
 *
 * - a watch on the file's directory, not the file: a watch on a file follows its inode, which
 *   an atomic rename (the keys CLI) or the symlink swap of a Kubernetes Secret volume replaces,
 *   after which it never fires again. In the directory, both show up as entries renamed
 *   (`..data` is swapped for a symlink to a new timestamped directory), and an edit in place as a
 *   child modified;
 * - a read of the path every `pollIntervalMs` (2 s), for what inotify cannot see: network file
 *   systems, or a path that is a symlink into another directory. It compares content with the
 *   content last read, so it cannot miss a change made before its first tick (`fs.watchFile`
 *   could: its first status, the one it compares against, is taken later, asynchronously). The
 *   file is small; reading and hashing it every 2 s costs next to nothing.
 *
 * Either one only prompts a read: the content is hashed, and only new content is parsed, so the
 * two never reload the same change twice. `reload()` is for SIGHUP.
 */
export function createKeysFileReloader(options: KeysFileReloaderOptions): KeysFileReloader {
  const { path, logger, metrics, pollIntervalMs = 2000, settleMs = 100, now = Date.now } = options;
  let store = options.initial;
  /** The content last read, good or bad: a bad file is reported once, not on every event. */
  let seen = store.fileSha256;
  let settling: NodeJS.Timeout | undefined;

  const succeeded = (): void => {
    metrics?.apiKeysLoaded.set(store.records.length);
    metrics?.apiKeysLastReloadSuccess.set(now() / 1000);
    metrics?.apiKeysLastReloadSuccessful.set(1);
  };
  metrics?.apiKeysReloads.inc({ outcome: 'success' }, 0);
  metrics?.apiKeysReloads.inc({ outcome: 'failure' }, 0);
  succeeded();

  const reload = (trigger: string, force = false): boolean => {
    let text: string | undefined;
    let unreadable: Error | undefined;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      unreadable = error as Error;
    }
    const content = text === undefined ? `unreadable: ${(unreadable as NodeJS.ErrnoException).code}` : sha256Hex(text);
    if (!force && content === seen) return false;
    seen = content;
    try {
      if (text === undefined) throw new Error(`API_KEYS_FILE ${path}: ${unreadable!.message}`);
      store = ApiKeyStore.parse(text, path);
    } catch (error) {
      metrics?.apiKeysReloads.inc({ outcome: 'failure' });
      metrics?.apiKeysLastReloadSuccessful.set(0);
      logger.error({ trigger, reason: (error as Error).message }, 'API keys file rejected; the last good keys stay in force');
      return false;
    }
    metrics?.apiKeysReloads.inc({ outcome: 'success' });
    succeeded();
    logger.info({ trigger, keys: store.records.length }, 'API keys reloaded');
    return true;
  };

  const soon = (trigger: string) => (): void => {
    settling ??= setTimeout(() => {
      settling = undefined;
      reload(trigger);
    }, settleMs).unref();
  };
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dirname(path), { persistent: false }, soon('watch'));
    watcher.on('error', (error) => {
      logger.warn({ err: error }, 'keys file directory watch failed; polling only');
      watcher?.close();
    });
  } catch (error) {
    logger.warn({ err: error }, 'cannot watch the keys file directory; polling only');
  }
  const poller = setInterval(soon('poll'), pollIntervalMs).unref();

  return {
    current: () => store,
    identify: (secret: string, at: number): ApiKey | KeyRefusal => store.identify(secret, at),
    reload,
    close() {
      watcher?.close();
      clearInterval(poller);
      clearTimeout(settling);
    },
  };
}
