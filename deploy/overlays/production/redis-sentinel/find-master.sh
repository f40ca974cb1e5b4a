# Sourced by both start scripts. Sets SELF (this pod's stable name), MASTER (the name of the
# current master: the one the other members' Sentinels report, else pod 0's) and FROM_SENTINEL
# (yes when a Sentinel named it: the set has run before). This pod's own Sentinel is not asked: it
# started with the pod and knows only what it was told then. A Sentinel that does not answer within
# 3 s (a member not yet started, or a busy one) is skipped; while none answers, they are asked
# again for up to SENTINEL_WAIT_S seconds (default 0). The Sentinels require their password, which
# redis-cli takes from REDISCLI_AUTH (never from an argument), unset again so that no server
# inherits it. redis-cli exits 0 on an error reply, so only a reply that names a host counts.
REDIS_SECRETS_DIR="${REDIS_SECRETS_DIR:-/etc/redis/secrets}"
SELF="$(hostname).redis.${NAMESPACE}.svc.cluster.local"
MASTER=""
FROM_SENTINEL=no
REDISCLI_AUTH="$(cat "$REDIS_SECRETS_DIR/sentinel-password")"
export REDISCLI_AUTH
sentinel_deadline=$(($(date +%s) + ${SENTINEL_WAIT_S:-0}))
while :; do
  for member in 0 1 2; do
    [ "redis-${member}" = "$(hostname)" ] && continue
    MASTER="$(timeout 3 redis-cli -h "redis-${member}.redis.${NAMESPACE}.svc.cluster.local" -p 26379 --raw \
      SENTINEL get-master-addr-by-name "$MASTER_NAME" 2>/dev/null | head -n 1 || true)"
    case "$MASTER" in
      redis-*) FROM_SENTINEL=yes && break ;;
      *) MASTER="" ;;
    esac
  done
  [ -n "$MASTER" ] || [ "$(date +%s)" -ge "$sentinel_deadline" ] && break
  sleep 1
done
unset REDISCLI_AUTH
[ -n "$MASTER" ] || MASTER="redis-0.redis.${NAMESPACE}.svc.cluster.local"
