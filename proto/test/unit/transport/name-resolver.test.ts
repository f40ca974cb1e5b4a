import { expect } from 'chai';
import { NameResolver, type ResolverListener } from '../../../transport/name-resolver';
import type { SocketAddress } from '../../../transport/target';

const RESOLUTION = { minIntervalMs: 0, refreshIntervalMs: 60_000 };
const BACKOFF = { initialMs: 60_000, multiplier: 1.6, jitter: 0, maxMs: 60_000, minConnectTimeoutMs: 20_000 };

/** Lets the lookup's promise settle and its callbacks run, and a rejection nobody handled be reported. */
const settled = () => new Promise((resolve) => setImmediate(resolve)).then(() => new Promise((resolve) => setImmediate(resolve)));

/**
 * Runs `body` with the process's unhandled rejections and warnings collected rather than reported
 * (a rejection nobody handles ends the services: their crash handlers exit).
 */
async function watchingProcess(body: (seen: { rejections: unknown[]; warnings: Error[] }) => Promise<void>): Promise<void> {
  const seen = { rejections: [] as unknown[], warnings: [] as Error[] };
  const onRejection = (reason: unknown) => seen.rejections.push(reason);
  const onWarning = (warning: Error) => seen.warnings.push(warning);
  const warningListeners = process.listeners('warning');
  process.removeAllListeners('warning');
  process.on('unhandledRejection', onRejection);
  process.on('warning', onWarning);
  try {
    await body(seen);
  } finally {
    process.off('unhandledRejection', onRejection);
    process.off('warning', onWarning);
    for (const listener of warningListeners) process.on('warning', listener);
  }
}

describe('NameResolver: what it tells its owner, from a lookup’s promise callbacks', () => {
  const resolvers: NameResolver[] = [];
  afterEach(() => {
    for (const resolver of resolvers.splice(0)) resolver.close();
  });

  function start(lookup: () => Promise<ReadonlyArray<{ address: string; family: number }>>, listener: ResolverListener): void {
    const resolver = new NameResolver('pets.test', 50051, lookup, RESOLUTION, BACKOFF, listener);
    resolvers.push(resolver);
    resolver.start();
  }

  it('tells a listener whose resolved() throws that the resolution failed, and why, with no unhandled rejection', async () => {
    await watchingProcess(async (seen) => {
      const failures: string[] = [];
      let lookups = 0;
      const lookup = async () => {
        lookups += 1;
        return [{ address: '10.0.0.1', family: 4 }];
      };
      start(lookup, {
        resolved: () => {
          throw new Error('cannot use 10.0.0.1');
        },
        failed: (reason) => failures.push(reason),
      });
      await settled();
      expect(failures).to.deep.equal(['name resolution for pets.test:50051 answered addresses that could not be used: Error: cannot use 10.0.0.1']);
      expect(seen.rejections).to.deep.equal([]);
      expect(lookups, 'asked again after the backoff (a minute here), not at once').to.equal(1);
    });
  });

  it('reports a listener that throws from failed() too as a process warning, with no unhandled rejection', async () => {
    await watchingProcess(async (seen) => {
      const throwing: ResolverListener = {
        resolved: () => {
          throw new Error('resolved threw');
        },
        failed: () => {
          throw new Error('failed threw');
        },
      };
      start(async () => [{ address: '10.0.0.1', family: 4 }], throwing);
      start(() => Promise.reject(new Error('getaddrinfo ENOTFOUND pets.test')), throwing);
      await settled();
      expect(seen.rejections).to.deep.equal([]);
      expect(seen.warnings.map((warning) => warning.message)).to.have.members([
        "name resolution for pets.test:50051 answered addresses that could not be used: Error: resolved threw; the resolver's listener threw on it: Error: failed threw",
        "name resolution failed for pets.test:50051: Error: getaddrinfo ENOTFOUND pets.test; the resolver's listener threw on it: Error: failed threw",
      ]);
    });
  });

  it('passes over records that are not addresses (null, no address, a duplicate) rather than throw on them', async () => {
    await watchingProcess(async (seen) => {
      const resolved: SocketAddress[][] = [];
      const records = [null, { family: 4 }, { address: '10.0.0.1', family: 4 }, { address: '10.0.0.1', family: 4 }, { address: '::1', family: 6 }];
      start(async () => records as unknown as Array<{ address: string; family: number }>, { resolved: (addresses) => resolved.push(addresses), failed: () => undefined });
      await settled();
      expect(resolved).to.deep.equal([
        [
          { host: '10.0.0.1', port: 50051 },
          { host: '::1', port: 50051 },
        ],
      ]);
      expect(seen.rejections).to.deep.equal([]);
    });
  });
});
