#!/bin/sh
# This pod's Redis: a replica of the master the Sentinels name; when no Sentinel answers (the set's
# first start), pod 0 is the master and the others replicate it. Announced by its stable name, so
# the Sentinels hand that name, not a pod IP that changes on restart, to the gateways. Its ACL
# users are the base's (redis-acl.sh) plus `replication`, which the replicas log in as
# (masteruser, masterauth: in a file, not on the command line), and `sentinel`.
#
# A master that restarts comes back empty (nothing is persisted). If it came back as the master
# (the Sentinels still name it while it is down for less than DOWN_AFTER_MS), the replicas would
# copy its empty data set and every key's minute and day would start over. So:
# - the other Sentinels are asked for up to 30 s before concluding that none is running: a busy
#   Sentinel that answers late must not make pod 0 take the set's first-start path;
# - when they name this very pod, they are asked to promote a replica, which still holds the
#   counters, until one accepts, and this pod replicates it; only if none is promoted within 20 s
#   (the whole set restarted) does it start as the master.
set -eu
SCRIPTS_DIR="${SCRIPTS_DIR:-/scripts}"
REDIS_CONFIG_DIR="${REDIS_CONFIG_DIR:-/etc/redis/config}"
SENTINEL_WAIT_S=30
. "$SCRIPTS_DIR/find-master.sh"
SENTINEL_WAIT_S=0
if [ "$MASTER" = "$SELF" ] && [ "$FROM_SENTINEL" = yes ]; then
  for member in $(other_members); do
    case "$(ask_sentinel "$member" SENTINEL failover "$MASTER_NAME")" in
      OK | *INPROG*) break ;;
    esac
  done
  deadline=$(($(date +%s) + 20))
  while { [ "$MASTER" = "$SELF" ] || [ "$FROM_SENTINEL" = no ]; } && [ "$(date +%s)" -lt "$deadline" ]; do
    sleep 1
    . "$SCRIPTS_DIR/find-master.sh"
  done
fi
. "$REDIS_CONFIG_DIR/redis-acl.sh"
printf 'masteruser replication\nmasterauth "%s"\n' "$(cat "$REDIS_SECRETS_DIR/replication-password")" > "$REDIS_RUN_DIR/replication.conf"
set -- "$REDIS_RUN_DIR/replication.conf" --protected-mode no --save "" --appendonly no --maxmemory 96mb --maxmemory-policy volatile-ttl \
  --aclfile "$REDIS_RUN_DIR/users.acl" --replica-announce-ip "$SELF"
if [ "$MASTER" != "$SELF" ]; then
  set -- "$@" --replicaof "$MASTER" 6379
fi
exec redis-server "$@"
