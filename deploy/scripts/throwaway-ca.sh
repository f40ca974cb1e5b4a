#!/usr/bin/env bash
# A throwaway certificate authority for staging, and the two certificates the overlays mount:
#   deploy/scripts/throwaway-ca.sh <namespace> <out-dir>
# writes <out-dir>/tls/ (the CA's key stays there: keep it out of git, delete it when done) and,
# in <out-dir>, the Secrets pet-service-tls (the pet service's certificate for
# pet-service.<namespace>.svc.cluster.local, and the CA its callers' certificates must chain to)
# and gateway-pet-service-tls (the gateway's client certificate, and the CA the pet service's must
# chain to), with cert-manager's key names (tls.crt, tls.key, ca.crt). Apply with
# `kubectl apply -f <out-dir>`. For production, have cert-manager issue them (docs/security.md).
# Another internal caller's certificate, from the same CA:
#   deploy/scripts/throwaway-ca.sh <namespace> <out-dir> <caller-name>
# Needs openssl and kubectl (offline: kubectl only writes the manifests).
set -euo pipefail
namespace="${1:?usage: throwaway-ca.sh <namespace> <out-dir> [caller-name]}"
out="${2:?usage: throwaway-ca.sh <namespace> <out-dir> [caller-name]}"
caller="${3:-}"
days="${DAYS:-30}"
tls="$out/tls"
mkdir -p "$tls"
chmod 700 "$out" "$tls"
umask 077

# A leaf certificate signed by the CA: issue <name> <serverAuth|clientAuth> <subjectAltName>
issue() {
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tls/$1.key" \
    -subj "/O=petstore/CN=$1" -out "$tls/$1.csr" 2>/dev/null
  openssl x509 -req -in "$tls/$1.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" -CAcreateserial -days "$days" -sha256 \
    -extfile <(printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=%s\nsubjectAltName=%s\n' "$2" "$3") \
    -out "$tls/$1.crt" 2>/dev/null
  rm -f "$tls/$1.csr"
}

# secret <name> <cert-name>: a kubernetes.io/tls Secret manifest with the CA beside the pair.
secret() {
  kubectl create secret generic "$1" --namespace "$namespace" --type kubernetes.io/tls \
    --from-file "tls.crt=$tls/$2.crt" --from-file "tls.key=$tls/$2.key" --from-file "ca.crt=$tls/ca.crt" \
    --dry-run=client -o yaml > "$out/$1.yaml"
}

if [ ! -f "$tls/ca.crt" ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tls/ca.key" -out "$tls/ca.crt" \
    -days "$days" -sha256 -subj "/O=petstore/CN=petstore throwaway CA ($namespace)" \
    -addext 'basicConstraints=critical,CA:TRUE' -addext 'keyUsage=critical,keyCertSign,cRLSign' 2>/dev/null
fi
spiffe() { echo "URI:spiffe://cluster.local/ns/$namespace/sa/$1"; }
if [ -n "$caller" ]; then
  issue "$caller" clientAuth "DNS:$caller.$namespace.svc,$(spiffe "$caller")"
  secret "$caller-pet-service-tls" "$caller"
  exit 0
fi
issue pet-service serverAuth "DNS:pet-service,DNS:pet-service.$namespace.svc,DNS:pet-service.$namespace.svc.cluster.local"
issue gateway clientAuth "DNS:gateway.$namespace.svc,$(spiffe gateway)"
secret pet-service-tls pet-service
secret gateway-pet-service-tls gateway
