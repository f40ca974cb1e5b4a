# Sourced by both start scripts. Sets SELF (this pod's stable name) and MASTER (the name of the
# current master: the one any Sentinel of the set reports, else pod 0's), and FROM_SENTINEL (yes
# when a Sentinel named it: the set has run before). A Sentinel that does not answer within 3 s
# (a member not yet started) is skipped. The Sentinels require their password, which redis-cli
# takes from REDISCLI_AUTH (never from an argument), unset again so that no server inherits it.
SELF="$(hostname).redis.${NAMESPACE}.svc.cluster.local"
MASTER=""
FROM_SENTINEL=no
REDISCLI_AUTH="$(cat /etc/redis/secrets/sentinel-password)"
export REDISCLI_AUTH
for member in 0 1 2; do
  MASTER="$(timeout 3 redis-cli -h "redis-${member}.redis.${NAMESPACE}.svc.cluster.local" -p 26379 --raw \
    SENTINEL get-master-addr-by-name "$MASTER_NAME" 2>/dev/null | head -n 1 || true)"
  [ -n "$MASTER" ] && FROM_SENTINEL=yes && break
done
unset REDISCLI_AUTH
[ -n "$MASTER" ] || MASTER="redis-0.redis.${NAMESPACE}.svc.cluster.local"
