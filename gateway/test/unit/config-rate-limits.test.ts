import { expect } from 'chai';
import { parseConfig } from '../../src/config';

const parse = (env: NodeJS.ProcessEnv) => parseConfig(env, 'keys.yaml');
const errorOf = (env: NodeJS.ProcessEnv): string => {
  try {
    parse(env);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected a configuration error');
};

describe('config: rate limits', () => {
  it('defaults to in-memory counters, the documented ban and the pre-auth limit', () => {
    const config = parse({});
    expect(config.redis).to.equal(undefined);
    expect(config.banThreshold).to.equal(10);
    expect(config.banSeconds).to.equal(900);
    expect(config.unauthenticatedPerMinute).to.equal(60);
    expect(config.unauthenticatedMaxAddresses).to.equal(50_000);
    expect(config.trustProxy).to.equal(false);
    expect(config.adminPort).to.equal(9090);
    expect(config.adminHost).to.equal('0.0.0.0');
    expect(config.redisCommandTimeoutMs).to.be.greaterThan(0);
  });

  it('reads every rate-limit variable', () => {
    const config = parse({
      REDIS_URL: 'redis://redis:6379/0',
      BAN_THRESHOLD: '3',
      BAN_SECONDS: '60',
      UNAUTHENTICATED_PER_MINUTE: '20',
      UNAUTHENTICATED_MAX_ADDRESSES: '1000',
      ADMIN_PORT: '0',
      REDIS_COMMAND_TIMEOUT_MS: '50',
      REDIS_STARTUP_WAIT_MS: '0',
    });
    expect(config.redis).to.deep.equal({ kind: 'standalone', variable: 'REDIS_URL', url: 'redis://redis:6379/0' });
    expect(config).to.include({
      banThreshold: 3,
      banSeconds: 60,
      unauthenticatedPerMinute: 20,
      unauthenticatedMaxAddresses: 1000,
      adminPort: 0,
      redisCommandTimeoutMs: 50,
      redisStartupWaitMs: 0,
    });
  });

  it('reads a Redis Cluster from REDIS_CLUSTER_NODES, with the data nodes\' credentials and TLS', () => {
    const config = parse({
      REDIS_CLUSTER_NODES: 'redis-0.redis:6379, 10.0.0.7:7000,[fd00::1]:6380',
      REDIS_USERNAME: 'gateway',
      REDIS_PASSWORD: 's3cret',
      REDIS_TLS: 'true',
    });
    expect(config.redis).to.deep.equal({
      kind: 'cluster',
      variable: 'REDIS_CLUSTER_NODES',
      nodes: [
        { host: 'redis-0.redis', port: 6379 },
        { host: '10.0.0.7', port: 7000 },
        { host: 'fd00::1', port: 6380 },
      ],
      username: 'gateway',
      password: 's3cret',
      tls: true,
    });
  });

  it('reads a Sentinel-managed Redis, with the Sentinels\' and the data nodes\' credentials apart', () => {
    const config = parse({
      REDIS_SENTINELS: 'sentinel-0:26379,sentinel-1:26379',
      REDIS_SENTINEL_MASTER: 'limits',
      REDIS_PASSWORD: 'data',
      REDIS_SENTINEL_PASSWORD: 'watch',
    });
    expect(config.redis).to.deep.equal({
      kind: 'sentinel',
      variable: 'REDIS_SENTINELS',
      sentinels: [
        { host: 'sentinel-0', port: 26379 },
        { host: 'sentinel-1', port: 26379 },
      ],
      masterName: 'limits',
      username: undefined,
      password: 'data',
      tls: false,
      sentinelUsername: undefined,
      sentinelPassword: 'watch',
    });
  });

  it('refuses two Redis deployments at once, naming both variables', () => {
    expect(errorOf({ REDIS_URL: 'redis://a:6379', REDIS_SENTINELS: 'b:26379', REDIS_SENTINEL_MASTER: 'm' })).to.match(
      /^invalid configuration: REDIS_URL and REDIS_SENTINELS: set only one;/,
    );
    expect(errorOf({ REDIS_CLUSTER_NODES: 'a:7000', REDIS_SENTINELS: 'b:26379' })).to.match(
      /^invalid configuration: REDIS_CLUSTER_NODES and REDIS_SENTINELS: set only one;/,
    );
  });

  it('refuses settings that the chosen deployment would silently ignore, or lacks', () => {
    expect(errorOf({ REDIS_SENTINELS: 'b:26379' })).to.match(/^invalid configuration: REDIS_SENTINEL_MASTER: required with REDIS_SENTINELS/);
    expect(errorOf({ REDIS_URL: 'redis://a:6379', REDIS_PASSWORD: 'x' })).to.match(/^invalid configuration: REDIS_PASSWORD: applies only with REDIS_CLUSTER_NODES or REDIS_SENTINELS; REDIS_URL carries its own/);
    expect(errorOf({ REDIS_CLUSTER_NODES: 'a:7000', REDIS_SENTINEL_PASSWORD: 'x' })).to.match(/^invalid configuration: REDIS_SENTINEL_PASSWORD: applies only with REDIS_SENTINELS$/);
    expect(errorOf({ REDIS_TLS: 'true' })).to.match(/^invalid configuration: REDIS_TLS: applies only with REDIS_CLUSTER_NODES or REDIS_SENTINELS$/);
    expect(errorOf({ REDIS_CLUSTER_NODES: 'redis://a:7000' })).to.match(/^invalid configuration: REDIS_CLUSTER_NODES: .*"redis:\/\/a:7000" is not host:port/);
    expect(errorOf({ REDIS_SENTINELS: 'a:99999', REDIS_SENTINEL_MASTER: 'm' })).to.match(/^invalid configuration: REDIS_SENTINELS: .*"a:99999" is not host:port/);
  });

  it('lets GATEWAY_WORKERS share any of the three deployments, and refuses it without one', () => {
    expect(parse({ GATEWAY_WORKERS: '2', REDIS_CLUSTER_NODES: 'a:7000' }).workers).to.equal(2);
    expect(errorOf({ GATEWAY_WORKERS: '2' })).to.match(/^invalid configuration: GATEWAY_WORKERS: more than 1 needs REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS/);
  });

  it('splits the limits over the counting processes during a Redis outage by default, or keeps them whole on each', () => {
    expect(parse({ REDIS_URL: 'redis://a:6379' })).to.include({ fallbackMode: 'split', fallbackReplicas: undefined });
    expect(parse({})).to.include({ fallbackMode: 'split', fallbackReplicas: undefined });
    expect(parse({ REDIS_URL: 'redis://a:6379', RATE_LIMIT_FALLBACK_REPLICAS: ' 4 ' })).to.include({ fallbackMode: 'split', fallbackReplicas: 4 });
    expect(parse({ REDIS_SENTINELS: 'b:26379', REDIS_SENTINEL_MASTER: 'm', RATE_LIMIT_FALLBACK: 'full' })).to.include({ fallbackMode: 'full' });
    expect(parse({ REDIS_URL: 'redis://a:6379', RATE_LIMIT_FALLBACK_REPLICAS: '' }).fallbackReplicas).to.equal(undefined);
  });

  it('refuses fallback settings that would be silently ignored', () => {
    expect(errorOf({ RATE_LIMIT_FALLBACK_REPLICAS: '3' })).to.match(
      /^invalid configuration: RATE_LIMIT_FALLBACK_REPLICAS: applies only with REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS/,
    );
    expect(errorOf({ RATE_LIMIT_FALLBACK: 'full' })).to.match(/^invalid configuration: RATE_LIMIT_FALLBACK: applies only with REDIS_URL/);
    expect(errorOf({ REDIS_URL: 'redis://a:6379', RATE_LIMIT_FALLBACK: 'full', RATE_LIMIT_FALLBACK_REPLICAS: '3' })).to.equal(
      'invalid configuration: RATE_LIMIT_FALLBACK_REPLICAS: applies only with RATE_LIMIT_FALLBACK=split',
    );
  });

  it('parses TRUST_PROXY as a flag, a hop count or a list of addresses', () => {
    expect(parse({ TRUST_PROXY: 'true' }).trustProxy).to.equal(true);
    expect(parse({ TRUST_PROXY: 'false' }).trustProxy).to.equal(false);
    expect(parse({ TRUST_PROXY: '1' }).trustProxy).to.equal(1);
    expect(parse({ TRUST_PROXY: 'loopback, 10.0.0.0/8,fd00::/8, 192.168.1.7' }).trustProxy).to.deep.equal([
      'loopback',
      '10.0.0.0/8',
      'fd00::/8',
      '192.168.1.7',
    ]);
  });

  for (const [name, value] of [
    ['BAN_THRESHOLD', '0'],
    ['BAN_THRESHOLD', '2.5'],
    ['BAN_SECONDS', '-1'],
    ['UNAUTHENTICATED_PER_MINUTE', 'many'],
    ['UNAUTHENTICATED_MAX_ADDRESSES', '0'],
    ['REDIS_URL', 'http://redis:6379'],
    ['REDIS_URL', 'not a url'],
    ['TRUST_PROXY', '10.0.0.0/33'],
    ['TRUST_PROXY', 'ingress'],
    ['ADMIN_PORT', '70000'],
    ['REDIS_STARTUP_WAIT_MS', '-5'],
    ['RATE_LIMIT_FALLBACK', 'shared'],
    ['RATE_LIMIT_FALLBACK_REPLICAS', '0'],
    ['RATE_LIMIT_FALLBACK_REPLICAS', '2.5'],
    ['RATE_LIMIT_FALLBACK_REPLICAS', '10001'],
    ['RATE_LIMIT_FALLBACK_REPLICAS', 'three'],
  ]) {
    it(`rejects ${name}=${value} in one line naming the variable`, () => {
      const message = errorOf({ [name!]: value });
      expect(message).to.match(new RegExp(`^invalid configuration: .*${name}: `));
      expect(message).not.to.include('\n');
    });
  }
});
