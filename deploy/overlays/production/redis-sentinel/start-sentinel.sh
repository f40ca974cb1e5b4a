#!/bin/sh
# This pod's Sentinel, watching the master the other Sentinels name (pod 0 on the set's first
# start). Its configuration file must be writable: Sentinel records what it learns there. It
# requires its own password of every client (the gateways, the other Sentinels: sentinel-pass),
# and logs in to the data nodes as their ACL user `sentinel`.
set -eu
. "${SCRIPTS_DIR:-/scripts}/find-master.sh"
SENTINEL_PASSWORD="$(cat "$REDIS_SECRETS_DIR/sentinel-password")"
DATA_PASSWORD="$(cat "$REDIS_SECRETS_DIR/sentinel-data-password")"
umask 077
cat > /sentinel/sentinel.conf <<CONF
port 26379
protected-mode no
requirepass "$SENTINEL_PASSWORD"
sentinel sentinel-pass "$SENTINEL_PASSWORD"
sentinel resolve-hostnames yes
sentinel announce-hostnames yes
sentinel announce-ip $SELF
sentinel monitor $MASTER_NAME $MASTER 6379 2
sentinel auth-user $MASTER_NAME sentinel
sentinel auth-pass $MASTER_NAME "$DATA_PASSWORD"
sentinel down-after-milliseconds $MASTER_NAME $DOWN_AFTER_MS
sentinel failover-timeout $MASTER_NAME 30000
sentinel parallel-syncs $MASTER_NAME 1
CONF
exec redis-server /sentinel/sentinel.conf --sentinel
