#!/bin/sh
# This pod's Redis: a replica of the master the Sentinels name; when no Sentinel answers (the set's
# first start), pod 0 is the master and the others replicate it. Announced by its stable name, so
# the Sentinels hand that name, not a pod IP that changes on restart, to the gateways. Its ACL
# users are the base's (redis-acl.sh) plus `replication`, which the replicas log in as
# (masteruser, masterauth: in a file, not on the command line), and `sentinel`.
set -eu
. /scripts/find-master.sh
. /etc/redis/config/redis-acl.sh
printf 'masteruser replication\nmasterauth "%s"\n' "$(cat "$REDIS_SECRETS_DIR/replication-password")" > "$REDIS_RUN_DIR/replication.conf"
set -- "$REDIS_RUN_DIR/replication.conf" --save "" --appendonly no --maxmemory 96mb --maxmemory-policy volatile-ttl \
  --aclfile "$REDIS_RUN_DIR/users.acl" --replica-announce-ip "$SELF"
if [ "$MASTER" != "$SELF" ]; then
  set -- "$@" --replicaof "$MASTER" 6379
fi
exec redis-server "$@"
