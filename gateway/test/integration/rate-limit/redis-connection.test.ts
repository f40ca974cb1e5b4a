import { expect } from 'chai';
import type { Redis } from 'ioredis';
import type { RedisTarget } from '../../../src/config';
import { checkAtStartup, closeRedis, connectRedis } from '../../../src/rate-limit/redis-connection';
import { type RedisSentinelServers, sentinelTarget, startRedisSentinelOrSkip } from '../../../../system-test/support/redis-topologies';
import { waitFor } from '../../../../system-test/support/wait-for';

const DATA_PASSWORD = 'data-password';
const SENTINEL_PASSWORD = 'sentinel-password';

/** The next `status` event of `client`: unlike `events.once`, not rejected by the errors a failover brings. */
const next = (client: Redis, status: string): Promise<void> => new Promise((resolve) => client.once(status, () => resolve()));

describe('connectRedis on Sentinels', function () {
  this.timeout(60_000);
  let servers: RedisSentinelServers;

  before(async function () {
    servers = await startRedisSentinelOrSkip(this, { downAfterMs: 5000, dataPassword: DATA_PASSWORD, sentinelPassword: SENTINEL_PASSWORD });
  });
  after(async () => {
    await servers?.stop();
  });

  function target(): RedisTarget {
    return sentinelTarget(servers, { dataPassword: DATA_PASSWORD, sentinelPassword: SENTINEL_PASSWORD });
  }

  /**
   * ioredis's failover detector answers `+switch-master` with `SentinelConnector.disconnect()`.
   * Arriving while the client reconnects, between its asking a Sentinel for the master and the
   * answer, that ends the client (status `end`, no retry): what the failover in
   * system-test/redis-sentinel.test.ts did to one gateway in three or four.
   */
  it('connects again when a failover announcement ends a reconnection in progress', async () => {
    const client = connectRedis({ target: target(), commandTimeoutMs: 1000 }) as Redis;
    try {
      expect(await checkAtStartup(client, target(), 5000)).to.deep.equal({ state: 'ready' });
      const connector = (client as unknown as { connector: { disconnect(): void } }).connector;
      const ended = next(client, 'end');
      // As when the master's socket dies: the client waits its retry delay, then asks the Sentinels.
      client.disconnect(true);
      await next(client, 'connecting');
      // The announcement, while the connector awaits a Sentinel's answer (it asked before 'connecting' was emitted).
      connector.disconnect();
      await ended;
      // ioredis alone would stay ended: no retry follows.
      await waitFor(() => client.status === 'ready', 5000, () => `status ${client.status}`);
      expect(await client.ping()).to.equal('PONG');
    } finally {
      await closeRedis(client);
    }
  });
});
