#!/bin/sh
# This pod's Sentinel, watching the master the other Sentinels name (pod 0 on the set's first
# start). Its configuration file must be writable: Sentinel records what it learns there.
set -eu
. /scripts/find-master.sh
cat > /sentinel/sentinel.conf <<CONF
port 26379
protected-mode no
sentinel resolve-hostnames yes
sentinel announce-hostnames yes
sentinel announce-ip $SELF
sentinel monitor $MASTER_NAME $MASTER 6379 2
sentinel down-after-milliseconds $MASTER_NAME $DOWN_AFTER_MS
sentinel failover-timeout $MASTER_NAME 30000
sentinel parallel-syncs $MASTER_NAME 1
CONF
exec redis-server /sentinel/sentinel.conf --sentinel
