import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPetServiceClient, PetStatus } from '@petstore/proto';
import { expect } from 'chai';
import { parse } from 'yaml';
import { CertificateFiles } from '../../proto/certificate-files';
import { createServer } from '../../pet-service/src/server';
import { MemoryPetRepository } from '../../pet-service/src/store/memory-pet-repository';
import { findExecutable, pendingOrRequired } from '../../system-test/support/executables';
import { type KubeObject, kubectlOrSkip, render } from './support/kubectl';
import { CREATED_OUTSIDE_GIT, makeSecrets, secretsIn } from './support/external-secrets';

/* eslint-disable @typescript-eslint/no-explicit-any -- rendered objects are read field by field */

const root = join(__dirname, '..', '..');
const overlays = ['staging', 'production'] as const;

describe('deploy/scripts/make-secrets.sh: the Secrets the overlays expect, consistent with each other and the manifests', function () {
  this.timeout(60_000);
  const made = {} as Record<(typeof overlays)[number], { dir: string; secrets: Record<string, Record<string, string>>; objects: KubeObject[]; namespace: string }>;

  before(function () {
    const kubectl = kubectlOrSkip(this);
    if (findExecutable('OPENSSL_BIN', 'openssl', '/usr/bin/openssl') === undefined) pendingOrRequired(this, 'REQUIRE_OPENSSL', 'openssl not found (Debian package openssl)');
    for (const overlay of overlays) {
      const dir = join(mkdtempSync(join(tmpdir(), 'make-secrets-')), 'out');
      makeSecrets(kubectl, overlay, dir);
      const objects = render(kubectl, join(root, 'deploy', 'overlays', overlay));
      made[overlay] = { dir, secrets: secretsIn(dir), objects, namespace: (objects.find((o) => o.kind === 'Deployment') as any).metadata.namespace };
    }
  });

  after(() => {
    for (const overlay of overlays) if (made[overlay] !== undefined) rmSync(join(made[overlay].dir, '..'), { recursive: true, force: true });
  });

  for (const overlay of overlays) {
    it(`${overlay}: makes exactly the Secrets, with the keys, that the overlay mounts and does not render`, () => {
      const { secrets } = made[overlay];
      expect(Object.fromEntries(Object.entries(secrets).map(([name, data]) => [name, Object.keys(data).sort()]))).to.deep.equal(
        Object.fromEntries(Object.entries(CREATED_OUTSIDE_GIT[overlay]).map(([name, keys]) => [name, [...keys].sort()])),
      );
      for (const file of readdirSync(made[overlay].dir).filter((name) => name.endsWith('.yaml'))) {
        expect((parse(readFileSync(join(made[overlay].dir, file), 'utf8')) as any).metadata.namespace, file).to.equal(made[overlay].namespace);
      }
    });

    it(`${overlay}: the MongoDB URI names every member, the petstore user with its password, its database and authSource`, () => {
      const { secrets, namespace, objects } = made[overlay];
      // Several hosts: not a URL that WHATWG's parser takes.
      const [, user, password, hosts, database, query] = /^mongodb:\/\/([^:]+):([^@]+)@([^/]+)\/([^?]*)\?(.*)$/.exec(secrets['pet-service-mongodb']!.uri!)!;
      const members = Number((objects.find((o) => o.kind === 'StatefulSet' && o.metadata.name === 'mongodb') as any).spec.replicas);
      expect(hosts!.split(',')).to.deep.equal(Array.from({ length: members }, (_, i) => `mongodb-${i}.mongodb.${namespace}.svc.cluster.local:27017`));
      expect([user, password, database]).to.deep.equal(['petstore', secrets['mongodb-auth']!['petstore-password'], 'petstore']);
      expect(Object.fromEntries(new URLSearchParams(query))).to.deep.equal({ replicaSet: 'rs0', authSource: 'petstore' });
      expect(secrets['mongodb-auth']!.keyfile).to.match(/^[A-Za-z0-9+/=]{6,1024}$/);
    });

    it(`${overlay}: the gateway's Redis credentials are the ones Redis's ACL file is made with`, () => {
      const { secrets, namespace } = made[overlay];
      const gateway = secrets['gateway-redis']!;
      const redis = secrets['redis-auth']!;
      if (overlay === 'staging') {
        expect(gateway.url).to.equal(`redis://gateway:${redis['gateway-password']}@redis.${namespace}.svc.cluster.local:6379`);
      } else {
        expect(gateway).to.deep.equal({ password: redis['gateway-password'], 'sentinel-password': redis['sentinel-password'] });
      }
      expect(new Set(Object.values(redis)).size, 'every password its own').to.equal(Object.keys(redis).length);
    });

    it(`${overlay}: the certificates make a mutual TLS call from the gateway to the pet service by the name the gateway dials`, async () => {
      const { secrets, objects } = made[overlay];
      const settings = (objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('gateway-settings')) as any).data;
      const dialled = /^dns:\/\/\/([^:]+):/.exec(settings.PET_SERVICE_ADDR)![1]!;
      const files = mkdtempSync(join(tmpdir(), 'made-tls-'));
      const write = (secret: string, key: string): string => {
        const path = join(files, `${secret}-${key}`);
        writeFileSync(path, secrets[secret]![key]!);
        return path;
      };
      const certificates = new CertificateFiles({ certFile: write('pet-service-tls', 'tls.crt'), keyFile: write('pet-service-tls', 'tls.key'), caFile: write('pet-service-tls', 'ca.crt') });
      const server = await createServer({ host: '127.0.0.1', port: 0, repository: new MemoryPetRepository(), pageTokenSecret: 's', tls: { certificates, requireClientCertificate: true } });
      const client = createPetServiceClient(`127.0.0.1:${server.port}`, {
        tls: { caFile: write('gateway-pet-service-tls', 'ca.crt'), certFile: write('gateway-pet-service-tls', 'tls.crt'), keyFile: write('gateway-pet-service-tls', 'tls.key') },
        serverNameOverride: dialled,
      });
      try {
        await client.listPets({ pageSize: 1, pageToken: '', status: PetStatus.PET_STATUS_UNSPECIFIED });
      } finally {
        client.close();
        await server.shutdown();
        rmSync(files, { recursive: true, force: true });
      }
    });
  }
});
