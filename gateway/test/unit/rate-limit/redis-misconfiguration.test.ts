import { expect } from 'chai';
import type { RedisTarget } from '../../../src/config';
import { createMisconfigurationMonitor, misconfiguration, singleRedisProblem } from '../../../src/rate-limit/redis-misconfiguration';

const STANDALONE: RedisTarget = { kind: 'standalone', variable: 'REDIS_URL', url: 'redis://redis:6379' };
const CLUSTER: RedisTarget = { kind: 'cluster', variable: 'REDIS_CLUSTER_NODES', nodes: [{ host: 'a', port: 7000 }], username: undefined, password: undefined, tls: false };
const SENTINEL: RedisTarget = {
  kind: 'sentinel',
  variable: 'REDIS_SENTINELS',
  sentinels: [{ host: 's', port: 26379 }],
  masterName: 'limits',
  username: undefined,
  password: undefined,
  tls: false,
  sentinelUsername: undefined,
  sentinelPassword: undefined,
};

const problem = (message: string, target: RedisTarget): string | undefined => misconfiguration(new Error(message), target);

describe('misconfiguration: errors of Redis that waiting will not fix', () => {
  it('on REDIS_URL: a cluster node, a replica, a Sentinel, refused credentials or permissions', () => {
    expect(problem('MOVED 12190 127.0.0.1:7103', STANDALONE)).to.match(/^REDIS_URL: points at a Redis Cluster node.*MOVED 12190.*REDIS_CLUSTER_NODES instead$/);
    expect(problem('ASK 3999 127.0.0.1:7102', STANDALONE)).to.match(/^REDIS_URL: .*REDIS_CLUSTER_NODES/);
    expect(problem("READONLY You can't write against a read only replica.", STANDALONE)).to.match(/^REDIS_URL: points at a read-only replica .*point it at the master/);
    expect(problem("ERR unknown command 'eval', with args beginning with: ", STANDALONE)).to.match(/^REDIS_URL: .*unknown command 'eval'.*REDIS_SENTINELS and REDIS_SENTINEL_MASTER/);
    expect(problem('WRONGPASS invalid username-password pair or user is disabled.', STANDALONE)).to.match(/^REDIS_URL: Redis refuses its credentials/);
    expect(problem('NOAUTH Authentication required.', STANDALONE)).to.match(/^REDIS_URL: Redis refuses its credentials/);
    expect(problem("NOPERM User gateway has no permissions to run the 'evalsha' command", STANDALONE)).to.match(/^REDIS_URL: the user may not run/);
    expect(problem("ERR The user executing the script can't run this command or subcommand script: b5c7…, on @user_script:3.", STANDALONE)).to.match(
      /^REDIS_URL: the user may not run the limiter's commands \(ERR The user executing the script .*\); give it the rules of deploy\/base\/redis-gateway\.acl$/,
    );
  });

  it('on REDIS_CLUSTER_NODES: a node that is no cluster node, a Sentinel port, refused credentials', () => {
    expect(problem('ERR This instance has cluster support disabled', CLUSTER)).to.match(/^REDIS_CLUSTER_NODES: a node is no cluster node.*REDIS_URL instead$/);
    expect(problem("ERR unknown command 'cluster', with args beginning with: 'slots'", CLUSTER)).to.match(/^REDIS_CLUSTER_NODES: .*Sentinel's port/);
    expect(problem('WRONGPASS invalid username-password pair or user is disabled.', CLUSTER)).to.match(/^REDIS_PASSWORD: the cluster nodes refuse/);
  });

  it('on REDIS_SENTINELS: tells the Sentinels\' credentials from the data nodes\', and an unknown master name', () => {
    expect(problem('All sentinels are unreachable. Retrying from scratch after 100ms. Last error: WRONGPASS invalid username-password pair', SENTINEL)).to.match(
      /^REDIS_SENTINEL_PASSWORD: the Sentinels refuse/,
    );
    expect(problem('WRONGPASS invalid username-password pair or user is disabled.', SENTINEL)).to.match(/^REDIS_PASSWORD: the master refuses/);
    expect(problem('connected to sentinel 127.0.0.1:26379 successfully, but got an invalid reply: null', SENTINEL)).to.equal(
      'REDIS_SENTINEL_MASTER: the Sentinels monitor no master named "limits"; set the name of their "sentinel monitor" line',
    );
    expect(problem('All sentinels are unreachable. Retrying from scratch after 100ms. Last error: ERR No such master with that name', SENTINEL)).to.match(
      /^REDIS_SENTINEL_MASTER: the Sentinels monitor no master named "limits"/,
    );
    expect(problem("failed to connect to sentinel 127.0.0.1:6379 because ERR unknown command 'sentinel'", SENTINEL)).to.match(/^REDIS_SENTINELS: lists a server that is no Sentinel/);
  });

  it('leaves outages, and what a Cluster or Sentinel client follows by itself, to the fallback', () => {
    for (const target of [STANDALONE, CLUSTER, SENTINEL]) {
      expect(problem('Command timed out', target)).to.equal(undefined);
      expect(problem('connect ECONNREFUSED 127.0.0.1:6379', target)).to.equal(undefined);
      expect(problem("Stream isn't writeable and enableOfflineQueue options is false", target)).to.equal(undefined);
      expect(problem('All sentinels are unreachable. Retrying from scratch after 100ms. Last error: connect ECONNREFUSED', target)).to.equal(undefined);
    }
    expect(problem('MOVED 12190 127.0.0.1:7103', CLUSTER)).to.equal(undefined);
    expect(problem("READONLY You can't write against a read only replica.", SENTINEL), 'a failover in progress').to.equal(undefined);
  });

  it('is one line, whatever the server said', () => {
    const line = problem(`ERR unknown command 'eval'\r\n${'x'.repeat(500)}`, STANDALONE)!;
    expect(line).not.to.match(/[\r\n]/);
    expect(line.length).to.be.below(300);
  });
});

describe('singleRedisProblem: what INFO says of the server REDIS_URL names', () => {
  it('refuses a Cluster node, a Sentinel and a replica, and accepts a master', () => {
    expect(singleRedisProblem('# Server\r\nredis_version:7.0.15\r\nredis_mode:cluster\r\n# Replication\r\nrole:master\r\n')).to.match(/^REDIS_URL: points at a Redis Cluster node/);
    expect(singleRedisProblem('# Server\r\nredis_mode:sentinel\r\n')).to.match(/^REDIS_URL: points at a Sentinel/);
    expect(singleRedisProblem('# Server\r\nredis_mode:standalone\r\n# Replication\r\nrole:slave\r\nmaster_host:10.0.0.1\r\n')).to.match(/^REDIS_URL: points at a read-only replica/);
    expect(singleRedisProblem('# Server\r\nredis_mode:standalone\r\n# Replication\r\nrole:master\r\nconnected_slaves:1\r\n')).to.equal(undefined);
  });
});

describe('createMisconfigurationMonitor', () => {
  it('counts every misconfiguration, logs each at most once per interval, shows the last until cleared', () => {
    let now = 0;
    let counted = 0;
    const logged: Array<[string, number]> = [];
    const monitor = createMisconfigurationMonitor(STANDALONE, { log: (line, occurrences) => logged.push([line, occurrences]), count: () => (counted += 1), now: () => now });
    monitor.report(new Error('Command timed out'));
    expect(monitor.problem).to.equal(undefined);
    expect(counted).to.equal(0);

    const readonly = new Error("READONLY You can't write against a read only replica.");
    monitor.report(readonly);
    now += 30_000;
    monitor.report(readonly);
    monitor.report(readonly);
    expect(counted).to.equal(3);
    expect(logged.map(([, n]) => n)).to.deep.equal([1]);
    expect(monitor.problem).to.match(/^REDIS_URL: points at a read-only replica/);

    now += 30_000;
    monitor.report(readonly);
    expect(logged.map(([, n]) => n), 'the next line a minute later sums what it did not log').to.deep.equal([1, 3]);

    monitor.report(new Error('NOAUTH Authentication required.'));
    expect(logged.map(([line]) => line.slice(0, 40)), 'a different problem is logged at once').to.deep.equal([
      'REDIS_URL: points at a read-only replica',
      'REDIS_URL: points at a read-only replica',
      'REDIS_URL: Redis refuses its credentials',
    ]);
    expect(monitor.problem).to.match(/^REDIS_URL: Redis refuses its credentials/);

    monitor.clear();
    expect(monitor.problem).to.equal(undefined);
  });
});
