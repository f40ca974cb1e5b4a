/**
 * Stands in for the one step of docs/deploy.md's "Applying" that cannot run against FerretDB:
 *   kubectl -n <namespace> exec mongodb-0 -- mongosh --quiet --norc --file /etc/mongodb/config/mongodb-init.js
 * (FerretDB's image has no mongosh; FerretDB has no replica set and no roles). Run by the cluster
 * suite with that step's kubectl arguments, it does what FerretDB can of mongodb-init.js: as
 * `root` (which FerretDB's --setup-username made at start, with the password from mongodb-auth),
 * it creates the pet service's user `petstore`, without roles, with the password from
 * mongodb-auth. `rs.initiate` has no counterpart. It reaches the member on its pod IP from the
 * node, as the kubelet's probes do. Prints what it did and what it did not.
 */
import { execFileSync } from 'node:child_process';
import { waitFor } from '../../../system-test/support/wait-for';
import { createPetServiceUser } from '../../test/support/mongodb-stand-in';

const args = process.argv.slice(2);
const namespace = args[args.indexOf('-n') + 1];
const pod = args[args.indexOf('exec') + 1];
if (args.indexOf('-n') < 0 || args.indexOf('exec') < 0 || namespace === undefined || pod === undefined) {
  throw new Error(`not the documented mongosh step: kubectl ${args.join(' ')}`);
}
const kubectl = (...more: string[]): string => execFileSync('kubectl', ['-n', namespace, ...more], { encoding: 'utf8' });
const ip = kubectl('get', 'pod', pod, '-o', 'jsonpath={.status.podIP}').trim();
const auth = JSON.parse(kubectl('get', 'secret', 'mongodb-auth', '-o', 'json')) as { data: Record<string, string> };
const password = (key: string): string => Buffer.from(auth.data[key]!, 'base64').toString('utf8');

void (async () => {
  let outcome: string | undefined;
  // The member has started (the step before waits for that), but FerretDB's set-up of `root` may not be done.
  await waitFor(async () => {
    outcome = await createPetServiceUser(`${ip}:27017`, password('root-password'), password('petstore-password')).catch(() => undefined);
    return outcome !== undefined;
  }, 60_000);
  console.error(`mongodb-init.js stand-in on ${namespace}/${pod}: user petstore ${outcome} (without roles: FerretDB has none); rs.initiate not run (no replica set)`);
})().catch((error: unknown) => {
  console.error(`mongodb-init.js stand-in on ${namespace}/${pod} failed: ${(error as Error).message}`);
  process.exit(1);
});
