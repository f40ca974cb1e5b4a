/**
 * Preloaded into a service process (`--require`) to give test host names several addresses
 * without a DNS server: `FAKE_DNS="pets.test=127.0.0.1,127.0.0.2"`. grpc-js's `dns:///` resolver
 * asks `dns.promises.lookup(name, { all: true })` for addresses and `resolveTxt` for a service
 * config; both are answered here for the listed names and passed through for any other. A test
 * that runs grpc-js in its own process imports it and adds names with {@link addFakeDnsName}.
 */
import dns from 'node:dns';
import { isIP } from 'node:net';

const table = new Map<string, readonly string[]>(
  (process.env.FAKE_DNS ?? '')
    .split(';')
    .filter((entry) => entry !== '')
    .map((entry) => {
      const [name = '', addresses = ''] = entry.split('=');
      return [name, addresses.split(',')] as const;
    }),
);

const { lookup, resolveTxt } = dns.promises;

dns.promises.lookup = ((hostname: string, options?: dns.LookupOptions) => {
  const addresses = table.get(hostname);
  if (addresses === undefined) return lookup(hostname, options ?? {});
  const records = addresses.map((address) => ({ address, family: isIP(address) }));
  return Promise.resolve(options?.all === true ? records : records[0]);
}) as typeof lookup;

dns.promises.resolveTxt = (hostname: string) => (table.has(hostname) ? Promise.resolve([]) : resolveTxt(hostname));

/** Makes `name` resolve to `addresses` in this process; the returned function removes it. */
export function addFakeDnsName(name: string, addresses: readonly string[]): () => void {
  table.set(name, addresses);
  return () => table.delete(name);
}
