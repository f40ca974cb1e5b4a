import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPetServiceClient, PetStatus } from '@petstore/proto';
import { expect } from 'chai';
import { MongoClient } from 'mongodb';
import { pendingOrRequired } from './support/executables';
import { ferretDbAuthArgs, findFerretDb, type MongoServer, startFerretDb } from './support/mongo-server';
import { runToRefusal, type ServiceProcess, startService, STARTUP_TIMEOUT_MS } from './support/service-process';

const ROOT_PASSWORD = 'the-root-password';
const PET_SERVICE_PASSWORD = 'the-pet-service-password';

/**
 * The pet service against a MongoDB-wire server that requires credentials: FerretDB 1.24 with its
 * SCRAM authentication (a test flag). What this does not show, because FerretDB has no roles and no
 * replica set: that the user is limited to readWrite on its database, and the members' keyfile
 * authentication (docs/security.md, "What was verified against what").
 */
describe('MongoDB with credentials (FerretDB’s SCRAM): the pet service connects as its own user, from a URI in a file', function () {
  this.timeout(60_000);
  let mongo: MongoServer;
  let dir: string;
  let petService: ServiceProcess | undefined;
  const host = (): string => mongo.uri.replace('mongodb://', '');
  const uri = (credentials: string): string => `mongodb://${credentials}${host()}/petstore?authSource=petstore`;

  before(async function () {
    const binary =
      findFerretDb() ?? pendingOrRequired(this, 'REQUIRE_MONGO', 'ferretdb not found (run .ci/install-ferretdb.sh or set FERRETDB_BIN): authentication is tested on FerretDB');
    mongo = await startFerretDb(binary, ferretDbAuthArgs('root', ROOT_PASSWORD));
    dir = mkdtempSync(join(tmpdir(), 'mongo-auth-'));
    const root = new MongoClient(`mongodb://root:${ROOT_PASSWORD}@${host()}/?authSource=admin`);
    try {
      // On MongoDB the user gets roles: [{ role: 'readWrite', db: 'petstore' }] (docs/deploy.md);
      // FerretDB refuses any role ("not implemented yet").
      await root.db('petstore').command({ createUser: 'petstore', pwd: PET_SERVICE_PASSWORD, roles: [] });
    } finally {
      await root.close();
    }
  });

  after(async () => {
    await petService?.stop();
    await mongo?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a connection without credentials, and a wrong password', async () => {
    for (const [credentials, refusal] of [
      ['', /requires authentication/],
      [`petstore:not-the-password@`, /Authentication failed/],
    ] as const) {
      const client = new MongoClient(uri(credentials), { serverSelectionTimeoutMS: 2000 });
      try {
        const error = await client
          .db('petstore')
          .collection('pets')
          .findOne({})
          .then(
            () => undefined,
            (caught: unknown) => caught as Error,
          );
        expect(error?.message, credentials).to.match(refusal);
      } finally {
        await client.close();
      }
    }
  });

  it('serves creates and reads with the user’s credentials from MONGODB_URI_FILE', async () => {
    writeFileSync(join(dir, 'uri'), `${uri(`petstore:${PET_SERVICE_PASSWORD}@`)}\n`);
    petService = await startService('pet-service', { MONGODB_URI_FILE: join(dir, 'uri'), MONGODB_DB: 'petstore', MONGODB_TIMEOUT_MS: '3000' });
    const client = createPetServiceClient(`127.0.0.1:${petService.port}`);
    try {
      const created = await client.createPet({ name: 'Rex', categoryId: '7', status: PetStatus.PET_STATUS_UNSPECIFIED });
      expect((await client.getPet({ id: created.pet!.id })).pet?.name).to.equal('Rex');
    } finally {
      client.close();
    }
  });

  it('stops at start-up with one line naming MONGODB_URI, without the password, when the credentials are missing or wrong', async function () {
    this.timeout(2 * STARTUP_TIMEOUT_MS + 20_000);
    for (const [credentials, cause] of [
      ['', /requires authentication/],
      [`petstore:${'wrong-password'}@`, /Authentication failed/],
    ] as const) {
      const result = await runToRefusal('pet-service', { MONGODB_URI: uri(credentials), MONGODB_TIMEOUT_MS: '3000' });
      expect(result.status, result.stderr).to.equal(1);
      const lines = result.stderr.trim().split('\n');
      expect(lines, result.stderr).to.have.length(1);
      expect(lines[0]).to.match(new RegExp(`^invalid configuration: MONGODB_URI: MongoDB at ${host()} refuses the credentials \\(`));
      expect(lines[0]).to.match(cause);
      expect(`${result.stdout}${result.stderr}`).to.not.include('wrong-password');
    }
  });
});
