import { createReportThrottle } from '@petstore/runtime';
import { type Redis, type RedisOptions, type SentinelAddress, type SentinelConnectionOptions, SentinelConnector } from 'ioredis';
import type { Logger } from 'pino';

/** Shortest time between two warnings about one Sentinel. */
export const SENTINEL_ERROR_REPORT_MS = 60_000;

/** Told of an error of a client ioredis opened to the Sentinel at `sentinel` (`host:port`). */
export type SentinelErrorListener = (error: Error, sentinel: string) => void;

/**
 * The method through which ioredis's Sentinel connector opens every client it makes to a Sentinel:
 * to ask for the master, and for its failover detector. Private in ioredis's types (6.0.0).
 */
interface SentinelDialer {
  connectToSentinel(endpoint: Partial<SentinelAddress>, options?: Partial<RedisOptions>): Redis;
}

/**
 * ioredis's Sentinel connector (as `RedisOptions.Connector`), with `onError` listening to every
 * client it opens to a Sentinel. The failover detector's clients (one per known Sentinel, reconnecting
 * once a minute) have no 'error' listener of their own in ioredis 6.0.0 (ioredis#1829): a Sentinel
 * that is down or whose name does not resolve yet (a StatefulSet member not scheduled) made ioredis
 * print `[ioredis] Unhandled error event` and a stack on stderr, once a minute per such Sentinel and
 * again at every reconnection, a failover's included. No option reaches those clients, so the one
 * seam that does is wrapped; a test fails if it stops being called (docs/decisions.md).
 */
export function reportingSentinelConnector(onError: SentinelErrorListener): NonNullable<RedisOptions['Connector']> {
  return class ReportingSentinelConnector extends SentinelConnector {
    // ioredis passes its whole options object, Sentinel settings included.
    constructor(options: unknown) {
      super(options as SentinelConnectionOptions);
      const dialer = this as unknown as SentinelDialer;
      const dial = dialer.connectToSentinel.bind(this);
      dialer.connectToSentinel = (endpoint, clientOptions) => {
        const client = dial(endpoint, clientOptions);
        const sentinel = `${endpoint.host ?? 'localhost'}:${endpoint.port ?? 26379}`;
        client.on('error', (error: Error) => onError(error, sentinel));
        return client;
      };
    }
  };
}

/**
 * Logs Sentinels' errors at warn at most once per {@link SENTINEL_ERROR_REPORT_MS} for each Sentinel
 * (with the occurrences the line stands for), and every other occurrence at debug. One Sentinel
 * down costs nothing while the others answer: the master is asked of the next one, and a failover
 * is still heard from them.
 */
export function logSentinelErrors(logger: Logger, now: () => number = () => performance.now()): SentinelErrorListener {
  const pass = createReportThrottle({ intervalMs: SENTINEL_ERROR_REPORT_MS, now });
  return (error, sentinel) => {
    const occurrences = pass(sentinel);
    const fields = { sentinel, reason: error.message, ...(occurrences === undefined ? {} : { occurrences }) };
    const message = 'Redis Sentinel not answering; the others are asked meanwhile';
    if (occurrences === undefined) logger.debug(fields, message);
    else logger.warn(fields, message);
  };
}
