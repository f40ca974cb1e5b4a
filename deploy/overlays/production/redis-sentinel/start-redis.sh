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
# - when they name this very pod, it waits, and asks them to promote a replica, for as long as a
#   Sentinel knows a replica that is up and holds a copy (replication offset above 0), then
#   replicates the promoted one. The request is repeated whenever no Sentinel has a failover in
#   progress: a Sentinel can accept it and then abort it (`-failover-abort-no-good-slave`), and
#   one that started a failover starts none of its own for twice the failover timeout. It starts
#   as the master only when the answering Sentinels know no such replica (the whole set
#   restarted: nothing to keep), or when none has answered for 30 s.
set -eu
SCRIPTS_DIR="${SCRIPTS_DIR:-/scripts}"
REDIS_CONFIG_DIR="${REDIS_CONFIG_DIR:-/etc/redis/config}"
SENTINEL_WAIT_S=30
. "$SCRIPTS_DIR/find-master.sh"
SENTINEL_WAIT_S=0
# Member $1's Sentinel's view of the master, one line: the host it names, then `running` when it
# has a failover in progress and `holds` when it knows a replica other than this pod that is up
# and holds a copy; nothing when it does not answer. (redis-cli --raw prints replies as key and
# value lines; `SENTINEL replicas` one such list per replica.)
sentinel_view() {
  master="$(ask_sentinel "$1" SENTINEL master "$MASTER_NAME" | awk 'key == "" { key = $0; next } { if (key == "ip") ip = $0; if (key == "flags") flags = $0; key = "" } END { if (ip != "") print ip, (flags ~ /failover_in_progress/ ? "running" : "idle") }')"
  [ -n "$master" ] || return 0
  holders="$(ask_sentinel "$1" SENTINEL replicas "$MASTER_NAME" | awk -v self="$SELF" 'key == "" { key = $0; next } { if (key == "ip") ip = $0; if (key == "flags") flags = $0; if (key == "slave-repl-offset" && ip != self && flags !~ /s_down|o_down|disconnected/ && $0 + 0 > 0) n++; key = "" } END { print n + 0 }')"
  [ "$holders" -gt 0 ] && echo "$master holds" || echo "$master"
}

if [ "$MASTER" = "$SELF" ] && [ "$FROM_SENTINEL" = yes ]; then
  last_answer=$(date +%s)
  while :; do
    answered=no
    running=no
    holds=no
    promoted=""
    for member in $(other_members); do
      view="$(sentinel_view "$member")"
      [ -n "$view" ] || continue
      answered=yes
      set -- $view
      [ "$1" = "$SELF" ] || promoted="$1"
      [ "$2" = running ] && running=yes
      [ "${3:-}" = holds ] && holds=yes
    done
    if [ -n "$promoted" ]; then
      MASTER="$promoted"
      echo "start-redis: the Sentinels promoted $MASTER; replicating it" >&2
      break
    fi
    if [ "$answered" = yes ]; then
      last_answer=$(date +%s)
      if [ "$holds" = no ]; then
        echo "start-redis: no replica holds a copy (the whole set restarted); starting as the master" >&2
        break
      fi
      if [ "$running" = no ]; then
        for member in $(other_members); do
          reply="$(ask_sentinel "$member" SENTINEL failover "$MASTER_NAME")"
          echo "start-redis: the Sentinels name this pod; asked ${member}'s to promote a replica: ${reply:-no answer}" >&2
          case "$reply" in
            OK | *INPROG*) break ;;
          esac
        done
      fi
    elif [ $(($(date +%s) - last_answer)) -ge 30 ]; then
      echo "start-redis: no Sentinel has answered for 30 s; starting as the master" >&2
      break
    fi
    sleep 1
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
