# Sourced by both start scripts. Sets SELF (this pod's stable name), MASTER (the name of the
# current master: the one the other members' Sentinels report, else pod 0's) and FROM_SENTINEL
# (yes when a Sentinel named it: the set has run before). This pod's own Sentinel is not asked: it
# started with the pod and knows only what it was told then. A Sentinel that does not answer within
# 3 s (a member not yet started, or a busy one) is skipped; while none answers, they are asked
# again for up to SENTINEL_WAIT_S seconds (default 0). The Sentinels require their password, which
# redis-cli takes from REDISCLI_AUTH (never from an argument), set for each command only, so that
# no server inherits it. redis-cli exits 0 on an error reply, so only a reply that names a host
# counts. Also defines other_members and ask_sentinel for the scripts that source it.
REDIS_SECRETS_DIR="${REDIS_SECRETS_DIR:-/etc/redis/secrets}"
POD="$(hostname)"
SELF="${POD}.redis.${NAMESPACE}.svc.cluster.local"

# The other members' pod names: never this pod, whose own Sentinel restarted with it.
other_members() {
  for number in 0 1 2; do
    [ "redis-${number}" = "$POD" ] || echo "redis-${number}"
  done
}

# Sends one command to member $1's Sentinel and prints its reply, nothing if it does not answer
# within 3 s. The password reaches redis-cli in REDISCLI_AUTH, set for that command alone.
ask_sentinel() {
  sentinel="$1"
  shift
  REDISCLI_AUTH="$(cat "$REDIS_SECRETS_DIR/sentinel-password")" timeout 3 \
    redis-cli -h "${sentinel}.redis.${NAMESPACE}.svc.cluster.local" -p 26379 --raw "$@" 2>/dev/null || true
}

MASTER=""
FROM_SENTINEL=no
sentinel_deadline=$(($(date +%s) + ${SENTINEL_WAIT_S:-0}))
while :; do
  for member in $(other_members); do
    MASTER="$(ask_sentinel "$member" SENTINEL get-master-addr-by-name "$MASTER_NAME" | head -n 1)"
    case "$MASTER" in
      redis-*) FROM_SENTINEL=yes && break ;;
      *) MASTER="" ;;
    esac
  done
  [ -n "$MASTER" ] || [ "$(date +%s)" -ge "$sentinel_deadline" ] && break
  sleep 1
done
[ -n "$MASTER" ] || MASTER="redis-0.redis.${NAMESPACE}.svc.cluster.local"
