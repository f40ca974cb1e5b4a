import { MongoClient } from 'mongodb';

/**
 * FerretDB stands in for MongoDB where no mongo image can be had (the container suite, the cluster
 * suite; docs/testing.md). It runs with its SCRAM authentication (`--test-enable-new-auth`, the
 * administrator `root` made at start by `--setup-username`), but it has no replica set and no
 * roles. These are the two places where the deployment's own steps cannot run against it, and
 * what the suites do instead.
 */

/**
 * The URI of Secret `pet-service-mongodb` (make-secrets.sh: every member, `replicaSet=rs0`) made
 * one FerretDB's: the first member alone, `directConnection=true`, the same user, password,
 * database and authSource. A driver told `replicaSet=rs0` waits for a member that says it belongs
 * to that set, which FerretDB never does.
 */
export function oneMemberUri(uri: string): string {
  const match = /^mongodb:\/\/([^@]+)@([^,/]+)[^/]*\/([^?]*)\?(.*)$/.exec(uri);
  if (match === null) throw new Error('pet-service-mongodb: not the URI make-secrets.sh writes (mongodb://user:password@hosts/database?options)');
  const [, credentials, first, database, query] = match;
  const options = new URLSearchParams(query);
  options.delete('replicaSet');
  options.set('directConnection', 'true');
  return `mongodb://${credentials}@${first}/${database}?${options.toString()}`;
}

/**
 * What deploy/base/mongodb-init.js does that FerretDB can do: as `root`, create the pet service's
 * user `petstore` in database `petstore`, unless it exists. Without roles: FerretDB refuses any
 * (on MongoDB the script gives `readWrite` on `petstore` only), and any FerretDB user may do
 * anything. `rs.initiate` has no counterpart: FerretDB has no replica set.
 */
export async function createPetServiceUser(hostPort: string, rootPassword: string, petstorePassword: string): Promise<'created' | 'present'> {
  const root = new MongoClient(`mongodb://root:${encodeURIComponent(rootPassword)}@${hostPort}/?authSource=admin&directConnection=true`, { serverSelectionTimeoutMS: 10_000 });
  try {
    await root.db('petstore').command({ createUser: 'petstore', pwd: petstorePassword, roles: [] });
    return 'created';
  } catch (error) {
    if (/already exists/i.test((error as Error).message)) return 'present';
    throw error;
  } finally {
    await root.close();
  }
}
