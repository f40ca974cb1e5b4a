import { status as Status } from '@grpc/grpc-js';
import { type BackoffOptions, ConnectionBackoff } from './connection-backoff';
import { Connection, type ConnectionOwner, type ConnectionSettings } from './connection';
import { DeadlineQueue } from './deadline-queue';
import { type Lookup, NameResolver, type ResolutionOptions } from './name-resolver';
import { addressToString, type SocketAddress } from './target';
import type { CallDispatcher, UnaryCall } from './unary-call';

/** A transport's state, as a gRPC channel's connectivity state. */
export type TransportState = 'IDLE' | 'CONNECTING' | 'READY' | 'TRANSIENT_FAILURE' | 'SHUTDOWN';

/** A connection's state, as the gauge of connections by state counts them. */
export type ConnectionState = 'connecting' | 'ready' | 'draining' | 'transient_failure' | 'idle';

/** Where the pool's addresses come from: fixed, or a name resolved again and again. */
export type AddressSource =
  | { readonly kind: 'static'; readonly addresses: readonly SocketAddress[] }
  | { readonly kind: 'dns'; readonly host: string; readonly port: number; readonly lookup: Lookup; readonly resolution: ResolutionOptions };

/**
 * One address and its connection over time: connected as soon as the pool is in use, reconnected
 * after a loss at once and after a failure with gRPC's connection backoff. A failure is sticky, as
 * gRFC A62 has it: the address reports TRANSIENT_FAILURE until a connection is ready again, even
 * while it retries, so that calls fail fast while every address is failing.
 */
class Endpoint implements ConnectionOwner {
  state: Exclude<ConnectionState, 'draining'> = 'idle';
  connection: Connection | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private removed = false;
  private readonly backoff: ConnectionBackoff;

  constructor(
    readonly address: SocketAddress,
    private readonly pool: ConnectionPool,
  ) {
    this.backoff = new ConnectionBackoff(pool.backoff);
  }

  /** Connects, unless a connection or a retry is under way. */
  connect(): void {
    if (this.removed || this.connection !== undefined || this.retryTimer !== undefined) return;
    if (this.state !== 'transient_failure') this.state = 'connecting';
    this.connection = new Connection(this.address, this.pool.settings, this, this.backoff.attemptDeadline());
    this.pool.changed();
  }

  ready(connection: Connection): void {
    if (connection !== this.connection) return;
    this.backoff.reset();
    this.state = 'ready';
    this.pool.changed();
  }

  failed(connection: Connection, reason: string): void {
    if (connection !== this.connection) return;
    this.connection = undefined;
    if (this.removed) return;
    this.pool.lastError = `${addressToString(this.address)}: ${reason}`;
    this.state = 'transient_failure';
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.connect();
    }, this.backoff.failed());
    this.retryTimer.unref();
    this.pool.changed();
    this.pool.resolveAgain();
  }

  lost(connection: Connection, reason: string | undefined): void {
    if (connection !== this.connection) return;
    this.connection = undefined;
    this.pool.draining.add(connection);
    if (reason !== undefined) this.pool.lastError = `${addressToString(this.address)}: ${reason}`;
    this.state = 'idle';
    // round_robin keeps every address connected: the replacement starts now.
    this.connect();
    this.pool.changed();
    this.pool.resolveAgain();
  }

  closed(connection: Connection): void {
    if (this.pool.draining.delete(connection)) this.pool.changed();
  }

  /** The address is gone (from the name, or the transport closed): its connection drains. */
  remove(): void {
    this.removed = true;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    const { connection } = this;
    this.connection = undefined;
    if (connection === undefined) return;
    if (this.state === 'ready') this.pool.draining.add(connection);
    connection.drain();
  }
}

/**
 * The connections of one transport: one per address (every A and AAAA record of a `dns:` name,
 * resolved again when a connection goes away, periodically and at most every `minIntervalMs`),
 * calls spread round robin over those that are ready. A call made while none is ready waits for
 * one within its deadline while some address is connecting; while every address is failing it
 * fails at once with UNAVAILABLE (gRPC's default, wait-for-ready off). A connection that
 * received GOAWAY, or whose address disappeared, takes no new call and closes once its calls end.
 */
export class ConnectionPool implements CallDispatcher {
  state: TransportState = 'IDLE';
  /** Connections that take no new call but have not closed yet. */
  readonly draining = new Set<Connection>();
  readonly deadlines = new DeadlineQueue();
  /** The last reason a connection failed or was lost, for the details of a call failed fast. */
  lastError: string | undefined;
  private readonly endpoints = new Map<string, Endpoint>();
  private ready: Endpoint[] = [];
  private next = 0;
  private readonly waiting = new Set<UnaryCall>();
  private readonly resolver: NameResolver | undefined;
  private started = false;
  private resolving = false;
  private resolutionError: string | undefined;
  private flushing = false;

  constructor(
    private readonly source: AddressSource,
    readonly settings: ConnectionSettings,
    readonly backoff: BackoffOptions,
  ) {
    if (source.kind === 'dns') {
      this.resolver = new NameResolver(source.host, source.port, source.lookup, source.resolution, backoff, {
        // While the name is being resolved again (a connection went away: the pet service's pod may
        // have been replaced), the pool is connecting, not failing: a call waits for the answer
        // rather than failing on the address that went away.
        resolving: () => {
          if (this.resolving) return;
          this.resolving = true;
          this.changed();
        },
        resolved: (addresses) => {
          this.resolving = false;
          this.resolutionError = undefined;
          this.setAddresses(addresses);
        },
        failed: (reason) => {
          this.resolving = false;
          this.resolutionError = reason;
          this.changed();
        },
      });
    }
  }

  dispatch(call: UnaryCall): void {
    if (call.settled) return;
    if (this.state === 'SHUTDOWN') {
      call.fail(Status.UNAVAILABLE, 'the transport is closed');
      return;
    }
    const connection = this.pick();
    if (connection !== undefined) {
      call.start(connection);
      return;
    }
    if (this.state === 'TRANSIENT_FAILURE') {
      call.fail(Status.UNAVAILABLE, this.failureDetails());
      return;
    }
    call.waiting = true;
    this.waiting.add(call);
    this.exitIdle();
  }

  forget(call: UnaryCall): void {
    call.waiting = false;
    this.waiting.delete(call);
  }

  /** Starts resolving and connecting, if not yet. */
  exitIdle(): void {
    if (this.started || this.state === 'SHUTDOWN') return;
    this.started = true;
    if (this.source.kind === 'static') {
      this.setAddresses(this.source.addresses);
      return;
    }
    this.resolving = true;
    this.changed();
    this.resolver!.start();
  }

  /** Connections by state, draining ones apart. */
  connections(): Record<ConnectionState, number> {
    const counts = { connecting: 0, ready: 0, draining: this.draining.size, transient_failure: 0, idle: 0 };
    for (const endpoint of this.endpoints.values()) counts[endpoint.state] += 1;
    return counts;
  }

  /** A connection went away or failed: the name may have changed. */
  resolveAgain(): void {
    this.resolver?.request();
  }

  /** Stops: no new call; calls waiting fail; open connections close once their calls end. */
  close(): void {
    if (this.state === 'SHUTDOWN') return;
    this.state = 'SHUTDOWN';
    this.resolver?.close();
    this.deadlines.close();
    for (const endpoint of this.endpoints.values()) endpoint.remove();
    this.endpoints.clear();
    this.ready = [];
    const waiting = [...this.waiting];
    this.waiting.clear();
    for (const call of waiting) {
      call.waiting = false;
      call.fail(Status.UNAVAILABLE, 'the transport was closed before the call started');
    }
  }

  /** An endpoint's state changed: the pool's state follows, and so do the calls waiting. */
  changed(): void {
    if (this.state === 'SHUTDOWN') return;
    let connecting = 0;
    let failing = 0;
    const ready: Endpoint[] = [];
    for (const endpoint of this.endpoints.values()) {
      if (endpoint.state === 'ready' && endpoint.connection !== undefined && !endpoint.connection.draining) ready.push(endpoint);
      else if (endpoint.state === 'connecting') connecting += 1;
      else if (endpoint.state === 'transient_failure') failing += 1;
    }
    this.ready = ready;
    if (ready.length > 0) this.state = 'READY';
    else if (connecting > 0 || this.resolving) this.state = 'CONNECTING';
    else if (failing > 0 || (this.started && this.endpoints.size === 0)) this.state = 'TRANSIENT_FAILURE';
    else this.state = this.started ? 'CONNECTING' : 'IDLE';
    if (this.waiting.size > 0 && (this.state === 'READY' || this.state === 'TRANSIENT_FAILURE')) this.flush();
  }

  private flush(): void {
    if (this.flushing) return;
    this.flushing = true;
    try {
      while (this.waiting.size > 0 && (this.state === 'READY' || this.state === 'TRANSIENT_FAILURE')) {
        const waiting = [...this.waiting];
        this.waiting.clear();
        for (const call of waiting) {
          call.waiting = false;
          this.dispatch(call);
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  private pick(): Connection | undefined {
    const { ready } = this;
    for (let tries = ready.length; tries > 0; tries -= 1) {
      if (this.next >= ready.length) this.next = 0;
      const connection = ready[this.next++]!.connection;
      if (connection !== undefined && !connection.draining) return connection;
    }
    return undefined;
  }

  private failureDetails(): string {
    if (this.endpoints.size === 0) return this.resolutionError ?? 'no address to connect to';
    return `No connection established. Last error: ${this.lastError ?? this.resolutionError ?? 'none'}`;
  }

  private setAddresses(addresses: readonly SocketAddress[]): void {
    if (this.state === 'SHUTDOWN') return;
    const wanted = new Map(addresses.map((address) => [addressToString(address), address]));
    for (const [key, endpoint] of this.endpoints) {
      if (wanted.has(key)) continue;
      this.endpoints.delete(key);
      endpoint.remove();
    }
    for (const [key, address] of wanted) {
      if (!this.endpoints.has(key)) this.endpoints.set(key, new Endpoint(address, this));
    }
    if (addresses.length === 0) this.resolutionError ??= 'the name resolved to no address';
    for (const endpoint of this.endpoints.values()) endpoint.connect();
    this.changed();
  }
}
