#!/bin/sh
# The single Redis (the base; staging): the ACL users of redis-acl.sh, nothing persisted, counters
# dropped closest to expiry first under memory pressure. More arguments are passed on.
set -eu
. "$(dirname "$0")/redis-acl.sh"
exec redis-server --save "" --appendonly no --maxmemory 96mb --maxmemory-policy volatile-ttl \
  --aclfile "$REDIS_RUN_DIR/users.acl" "$@"
