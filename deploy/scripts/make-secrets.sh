#!/usr/bin/env bash
# Every Secret an overlay expects to exist outside git, with new random values:
#   deploy/scripts/make-secrets.sh <staging|production> <out-dir>
# writes one manifest per Secret into <out-dir> (mode 0700; keep it out of git), to apply with
# `kubectl apply -f <out-dir>` before the overlay. The certificates come from a throwaway CA
# (throwaway-ca.sh) unless THROWAWAY_CA=0, for when cert-manager issues them (docs/security.md).
# Passwords are hex, so they need no quoting in a URL or a configuration file. Needs openssl and
# kubectl (offline: kubectl only writes the manifests).
set -euo pipefail
overlay="${1:?usage: make-secrets.sh <staging|production> <out-dir>}"
out="${2:?usage: make-secrets.sh <staging|production> <out-dir>}"
case "$overlay" in
  staging) namespace=petstore-staging ;;
  production) namespace=petstore ;;
  *) echo "make-secrets.sh: unknown overlay $overlay (staging or production)" >&2; exit 2 ;;
esac
mkdir -p "$out/values"
chmod 700 "$out" "$out/values"
umask 077

# value <file> <text>: a Secret's key, as a file without a line break.
value() { printf %s "$2" > "$out/values/$1"; }
password() { openssl rand -hex 24; }
# secret <name> <key>=<value-file>...
secret() {
  local name="$1"
  shift
  local args=()
  for pair in "$@"; do args+=(--from-file "${pair%%=*}=$out/values/${pair#*=}"); done
  kubectl create secret generic "$name" --namespace "$namespace" "${args[@]}" --dry-run=client -o yaml > "$out/$name.yaml"
}

value redis-admin "$(password)"
value redis-gateway "$(password)"
value mongodb-root "$(password)"
value mongodb-petstore "$(password)"
# MongoDB's keyfile: 6 to 1024 base64 characters, the same on every member.
value mongodb-keyfile "$(openssl rand -base64 756 | tr -d '\n')"
members=""
for i in 0 1 2; do members="$members${members:+,}mongodb-$i.mongodb.$namespace.svc.cluster.local:27017"; done
value mongodb-uri "mongodb://petstore:$(cat "$out/values/mongodb-petstore")@$members/petstore?replicaSet=rs0&authSource=petstore"
secret mongodb-auth keyfile=mongodb-keyfile root-password=mongodb-root petstore-password=mongodb-petstore
secret pet-service-mongodb uri=mongodb-uri

if [ "$overlay" = staging ]; then
  value redis-url "redis://gateway:$(cat "$out/values/redis-gateway")@redis.$namespace.svc.cluster.local:6379"
  secret redis-auth admin-password=redis-admin gateway-password=redis-gateway
  secret gateway-redis url=redis-url
else
  value redis-replication "$(password)"
  value redis-sentinel-data "$(password)"
  value redis-sentinel "$(password)"
  value page-token-secret "$(openssl rand -base64 32 | tr -d '\n')"
  secret redis-auth admin-password=redis-admin gateway-password=redis-gateway replication-password=redis-replication \
    sentinel-data-password=redis-sentinel-data sentinel-password=redis-sentinel
  secret gateway-redis password=redis-gateway sentinel-password=redis-sentinel
  secret pet-service-page-token PAGE_TOKEN_SECRET=page-token-secret
fi

if [ "${THROWAWAY_CA:-1}" != 0 ]; then
  "$(dirname "$0")/throwaway-ca.sh" "$namespace" "$out"
fi
rm -rf "$out/values"
echo "Secrets for $overlay ($namespace) in $out: kubectl apply -f $out"
