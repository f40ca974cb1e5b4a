# Sourced by the Redis start scripts: writes the ACL file $REDIS_RUN_DIR/users.acl from the
# passwords in the Secret redis-auth (mounted at $REDIS_SECRETS_DIR) and the gateway's rules
# (redis-gateway.acl, beside this script). No default user: every connection authenticates.
# Passwords are stored as SHA-256 digests (#…), never in clear, and nothing secret is in a
# command line or an environment variable.
REDIS_CONFIG_DIR="${REDIS_CONFIG_DIR:-/etc/redis/config}"
REDIS_SECRETS_DIR="${REDIS_SECRETS_DIR:-/etc/redis/secrets}"
REDIS_RUN_DIR="${REDIS_RUN_DIR:-/run/redis}"
digest() { printf %s "$(cat "$REDIS_SECRETS_DIR/$1")" | sha256sum | cut -d' ' -f1; }
{
  echo "user default off resetkeys resetchannels -@all"
  echo "user admin on #$(digest admin-password) ~* &* +@all"
  echo "user gateway on #$(digest gateway-password) $(grep -v '^#' "$REDIS_CONFIG_DIR/redis-gateway.acl" | tr '\n' ' ')"
  # A Sentinel-managed set (production) also has the replicas' and the Sentinels' users, with the
  # commands Redis's documentation lists for each.
  if [ -f "$REDIS_SECRETS_DIR/replication-password" ]; then
    echo "user replication on #$(digest replication-password) +psync +replconf +ping"
  fi
  if [ -f "$REDIS_SECRETS_DIR/sentinel-data-password" ]; then
    echo "user sentinel on #$(digest sentinel-data-password) allchannels +multi +slaveof +ping +exec +subscribe +config|rewrite +role +publish +info +client|setname +client|kill +script|kill"
  fi
} > "$REDIS_RUN_DIR/users.acl"
