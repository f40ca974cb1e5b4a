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
    expect(config.redisUrl).to.equal(undefined);
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
    expect(config).to.include({
      redisUrl: 'redis://redis:6379/0',
      banThreshold: 3,
      banSeconds: 60,
      unauthenticatedPerMinute: 20,
      unauthenticatedMaxAddresses: 1000,
      adminPort: 0,
      redisCommandTimeoutMs: 50,
      redisStartupWaitMs: 0,
    });
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
  ]) {
    it(`rejects ${name}=${value} in one line naming the variable`, () => {
      const message = errorOf({ [name!]: value });
      expect(message).to.match(new RegExp(`^invalid configuration: .*${name}: `));
      expect(message).not.to.include('\n');
    });
  }
});
