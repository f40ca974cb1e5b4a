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
