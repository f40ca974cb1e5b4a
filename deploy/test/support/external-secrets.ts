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
