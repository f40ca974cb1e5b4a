import { promises as dns } from 'node:dns';
import { type BackoffOptions, ConnectionBackoff } from './connection-backoff';
import { describe } from './call-error';
import { joinHostPort, type SocketAddress } from './target';

/** Every address of a host name: its A and AAAA records. */
export type Lookup = (hostname: string) => Promise<ReadonlyArray<{ readonly address: string; readonly family: number }>>;

/**
 * The system's resolver (`getaddrinfo`, as grpc-js's `dns:` resolver asks it), every address.
 * Read from `dns.promises` at each call, so that a test may replace it in the process.
 */
export const systemLookup: Lookup = (hostname) => dns.lookup(hostname, { all: true });

/** The records of `server` (`ip` or `ip:port`), for a `dns://server/name` target: A and AAAA, asked apart. */
export function lookupAt(server: string): Lookup {
  const resolver = new dns.Resolver();
  resolver.setServers([server]);
  return async (hostname) => {
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(hostname), resolver.resolve6(hostname)]);
    if (v4.status === 'rejected' && v6.status === 'rejected') throw v4.reason;
    return [
      ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
    ];
  };
}

/** When a name is resolved again. */
export interface ResolutionOptions {
  /** Shortest time between two resolutions: one asked for sooner waits until then. */
  readonly minIntervalMs: number;
  /** Resolved again this long after each resolution, whatever happens. */
  readonly refreshIntervalMs: number;
}

/** What the resolver tells its owner. A throw from either is taken as a failure (below), never left to escape. */
export interface ResolverListener {
  /** A resolution has started; {@link resolved} or {@link failed} follows. */
  resolving?(): void;
  /** The name's addresses now (possibly none). */
  resolved(addresses: SocketAddress[]): void;
  /** The name could not be resolved: `reason` says why. The last addresses stay in force. */
  failed(reason: string): void;
}

/**
 * Resolves one name to its addresses: at {@link start}, again on {@link request} (a connection
 * was lost: the name may have changed) no sooner than `minIntervalMs` after the last resolution,
 * every `refreshIntervalMs`, and after a failure (or an answer with no address) with backoff. One
 * resolution at a time.
 */
export class NameResolver {
  private lastStarted = Number.NEGATIVE_INFINITY;
  private inFlight = false;
  private timer: NodeJS.Timeout | undefined;
  /** When {@link timer} fires. */
  private scheduledAt = Number.POSITIVE_INFINITY;
  private closed = false;
  private readonly backoff: ConnectionBackoff;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly lookup: Lookup,
    private readonly options: ResolutionOptions,
    backoff: BackoffOptions,
    private readonly listener: ResolverListener,
  ) {
    this.backoff = new ConnectionBackoff(backoff);
  }

  start(): void {
    this.resolveNow();
  }

  /** Resolves again as soon as the minimum interval allows, unless a resolution is under way or already planned sooner. */
  request(): void {
    if (this.closed || this.inFlight) return;
    const earliest = this.lastStarted + this.options.minIntervalMs;
    const now = Date.now();
    if (earliest <= now) {
      this.resolveNow();
      return;
    }
    this.schedule(earliest - now);
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
  }

  private schedule(delayMs: number): void {
    const at = Date.now() + delayMs;
    if (this.timer !== undefined && this.scheduledAt <= at) return;
    clearTimeout(this.timer);
    this.scheduledAt = at;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.resolveNow();
    }, delayMs);
    this.timer.unref();
  }

  private resolveNow(): void {
    if (this.closed || this.inFlight) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.scheduledAt = Number.POSITIVE_INFINITY;
    this.inFlight = true;
    this.lastStarted = Date.now();
    this.backoff.attemptDeadline();
    let answer: Promise<ReadonlyArray<{ readonly address: string; readonly family: number }>>;
    try {
      this.listener.resolving?.();
      answer = this.lookup(this.host);
    } catch (error) {
      answer = Promise.reject(error);
    }
    // These callbacks run outside any caller's try: a throw in them, the listener's included, would
    // be an unhandled rejection, which ends the services (their crash handlers exit).
    answer.then(
      (records) => {
        this.inFlight = false;
        if (this.closed) return;
        const addresses: SocketAddress[] = [];
        const seen = new Set<string>();
        for (const record of Array.isArray(records) ? (records as unknown[]) : []) {
          const address = typeof record === 'object' && record !== null ? (record as { address?: unknown }).address : undefined;
          if (typeof address !== 'string' || seen.has(address)) continue;
          seen.add(address);
          addresses.push({ host: address, port: this.port });
        }
        let taken = true;
        try {
          this.listener.resolved(addresses);
        } catch (error) {
          taken = false;
          this.tellFailed(`name resolution for ${joinHostPort(this.host, this.port)} answered addresses that could not be used: ${describe(error)}`);
        }
        // No address is as good as a failure, and so are addresses the owner could not take: asked
        // again with backoff, not at the next refresh.
        if (addresses.length > 0 && taken) {
          this.backoff.reset();
          this.schedule(this.options.refreshIntervalMs);
        } else {
          this.schedule(this.backoff.failed());
        }
      },
      (error: unknown) => {
        this.inFlight = false;
        if (this.closed) return;
        this.schedule(this.backoff.failed());
        this.tellFailed(`name resolution failed for ${joinHostPort(this.host, this.port)}: ${describe(error)}`);
      },
    );
  }

  /** Tells the listener of a failure; one that throws even then is left a process warning, the library's log. */
  private tellFailed(reason: string): void {
    try {
      this.listener.failed(reason);
    } catch (error) {
      process.emitWarning(`${reason}; the resolver's listener threw on it: ${describe(error)}`, { code: 'PETSTORE_NAME_RESOLVER' });
    }
  }
}
