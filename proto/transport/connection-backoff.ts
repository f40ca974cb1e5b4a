/**
 * The parameters of gRPC's connection backoff (grpc/grpc doc/connection-backoff.md), in
 * milliseconds: how long to wait before the next attempt after a failed one, and how long an
 * attempt may take.
 */
export interface BackoffOptions {
  /** The first wait. */
  readonly initialMs: number;
  /** Each wait is the last times this, up to {@link maxMs}. */
  readonly multiplier: number;
  /** Each wait is randomised by up to this fraction either way. */
  readonly jitter: number;
  readonly maxMs: number;
  /** The least time an attempt may take before it fails. */
  readonly minConnectTimeoutMs: number;
}

/** connection-backoff.md's values. */
export const GRPC_CONNECTION_BACKOFF: BackoffOptions = { initialMs: 1000, multiplier: 1.6, jitter: 0.2, maxMs: 120_000, minConnectTimeoutMs: 20_000 };

/** @throws RangeError naming the parameter that is not a usable number. */
export function checkBackoff(options: BackoffOptions): BackoffOptions {
  const { initialMs, multiplier, jitter, maxMs, minConnectTimeoutMs } = options;
  if (!(initialMs >= 0 && Number.isFinite(initialMs))) throw new RangeError(`backoff.initialMs: must be a number of milliseconds, not ${initialMs}`);
  if (!(multiplier >= 1 && Number.isFinite(multiplier))) throw new RangeError(`backoff.multiplier: must be 1 or more, not ${multiplier}`);
  if (!(jitter >= 0 && jitter < 1)) throw new RangeError(`backoff.jitter: must be from 0 to less than 1, not ${jitter}`);
  if (!(maxMs >= initialMs && Number.isFinite(maxMs))) throw new RangeError(`backoff.maxMs: must be at least initialMs, not ${maxMs}`);
  if (!(minConnectTimeoutMs > 0 && Number.isFinite(minConnectTimeoutMs))) throw new RangeError(`backoff.minConnectTimeoutMs: must be a positive number of milliseconds, not ${minConnectTimeoutMs}`);
  return options;
}

/**
 * connection-backoff.md's ConnectWithBackoff for one address, as state between attempts:
 *
 * ```
 * current_backoff = INITIAL_BACKOFF
 * current_deadline = now() + INITIAL_BACKOFF
 * while (TryConnect(Max(current_deadline, now() + MIN_CONNECT_TIMEOUT)) != SUCCESS)
 *   SleepUntil(current_deadline)
 *   current_backoff = Min(current_backoff * MULTIPLIER, MAX_BACKOFF)
 *   current_deadline = now() + current_backoff + UniformRandom(-JITTER * current_backoff, JITTER * current_backoff)
 * ```
 *
 * A successful connection resets it ({@link reset}), so the next loss starts over.
 */
export class ConnectionBackoff {
  private backoff: number;
  private deadline: number | undefined;

  constructor(
    private readonly options: BackoffOptions,
    private readonly now: () => number = Date.now,
    private readonly random: () => number = Math.random,
  ) {
    this.backoff = options.initialMs;
  }

  /** An attempt begins now: the time by which it must have connected (ms since the epoch). */
  attemptDeadline(): number {
    const now = this.now();
    this.deadline ??= now + this.options.initialMs;
    return Math.max(this.deadline, now + this.options.minConnectTimeoutMs);
  }

  /** The attempt failed: how long to wait before the next one (the rest of this round's backoff), and the next round set. */
  failed(): number {
    const now = this.now();
    const wait = Math.max(0, (this.deadline ?? now) - now);
    this.backoff = Math.min(this.backoff * this.options.multiplier, this.options.maxMs);
    const jitter = this.options.jitter * this.backoff;
    this.deadline = now + wait + this.backoff + (this.random() * 2 - 1) * jitter;
    return wait;
  }

  /** A connection was made: the next attempt starts from the initial backoff again. */
  reset(): void {
    this.backoff = this.options.initialMs;
    this.deadline = undefined;
  }
}
