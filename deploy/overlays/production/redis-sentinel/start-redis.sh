#!/bin/sh
# This pod's Redis: a replica of the master the Sentinels name; when no Sentinel answers (the set's
# first start), pod 0 is the master and the others replicate it. Announced by its stable name, so
# the Sentinels hand that name, not a pod IP that changes on restart, to the gateways.
set -eu
. /scripts/find-master.sh
set -- --protected-mode no --save "" --appendonly no --maxmemory 96mb --maxmemory-policy volatile-ttl \
  --replica-announce-ip "$SELF"
if [ "$MASTER" != "$SELF" ]; then
  set -- "$@" --replicaof "$MASTER" 6379
fi
exec redis-server "$@"
