import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

/**
 * Secrets each overlay expects to exist without rendering them, with their keys: what
 * deploy/scripts/make-secrets.sh makes (and cert-manager, for the certificates; docs/security.md).
 */
export const CREATED_OUTSIDE_GIT: Record<'staging' | 'production', Readonly<Record<string, readonly string[]>>> = {
  staging: {
    'pet-service-tls': ['tls.crt', 'tls.key', 'ca.crt'],
    'gateway-pet-service-tls': ['tls.crt', 'tls.key', 'ca.crt'],
    'pet-service-mongodb': ['uri'],
    'mongodb-auth': ['keyfile', 'root-password', 'petstore-password'],
    'redis-auth': ['admin-password', 'gateway-password'],
    'gateway-redis': ['url'],
  },
  production: {
    'pet-service-tls': ['tls.crt', 'tls.key', 'ca.crt'],
    'gateway-pet-service-tls': ['tls.crt', 'tls.key', 'ca.crt'],
    'pet-service-mongodb': ['uri'],
    'mongodb-auth': ['keyfile', 'root-password', 'petstore-password'],
    'redis-auth': ['admin-password', 'gateway-password', 'replication-password', 'sentinel-data-password', 'sentinel-password'],
    'gateway-redis': ['password', 'sentinel-password'],
    'pet-service-page-token': ['PAGE_TOKEN_SECRET'],
  },
};

/**
 * The keys Secret, which both overlays mount and neither renders: its content is the operator's
 * keys file, created and changed by the documented steps (docs/keys.md), never by
 * make-secrets.sh, and owned by no `kubectl apply -k`, so a revocation survives the next apply.
 */
export const KEYS_SECRET: Readonly<Record<string, readonly string[]>> = { 'gateway-api-keys': ['keys.yaml'] };

/**
 * Runs deploy/scripts/make-secrets.sh for `overlay` into `dir` with `kubectl` (which writes the
 * manifests offline); throws with its stderr unless it exits 0. Needs openssl.
 */
export function makeSecrets(kubectl: string, overlay: 'staging' | 'production', dir: string): void {
  const script = join(__dirname, '..', '..', 'scripts', 'make-secrets.sh');
  const result = spawnSync('bash', [script, overlay, dir], { encoding: 'utf8', env: { ...process.env, PATH: `${join(kubectl, '..')}:${process.env.PATH}` } });
  if (result.status !== 0) throw new Error(`make-secrets.sh ${overlay} exited ${result.status}: ${result.stderr}`);
}

/** The Secret manifests in `dir` (as make-secrets.sh writes them), by name: each key's value as text. */
export function secretsIn(dir: string): Record<string, Record<string, string>> {
  const secrets: Record<string, Record<string, string>> = {};
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.yaml'))) {
    const secret = parse(readFileSync(join(dir, file), 'utf8')) as { metadata: { name: string }; data: Record<string, string> };
    secrets[secret.metadata.name] = Object.fromEntries(Object.entries(secret.data).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')]));
  }
  return secrets;
}
