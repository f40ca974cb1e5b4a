#!/usr/bin/env bash
# Builds every image the cluster suite runs and imports them into the cluster's containerd
# (deploy/e2e/cluster.sh must be up):
#   - the project's two images, by deploy/images/build.sh (tag $E2E_IMAGE_TAG, default e2e);
#   - stand-ins for the third-party images no registry here can serve: redis:7.4.5-bookworm
#     (Debian 12's redis-server, deploy/e2e/stand-ins/redis.Containerfile) and, for mongo:8,
#     FerretDB (stand-ins/ferretdb.Containerfile; the overlay patch in overlays/ferretdb/).
# Stand-ins are rebuilt only when their recipe changes (a label holds its hash).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
images_dir="$root/deploy/images"
tag="${E2E_IMAGE_TAG:-e2e}"
FERRETDB_BIN="${FERRETDB_BIN:-/usr/local/bin/ferretdb}"
REDIS_IMAGE=docker.io/library/redis:7.4.5-bookworm
FERRETDB_IMAGE=localhost/petstore-e2e/ferretdb:v1.24.0
PODMAN=(podman --runtime /usr/sbin/runc)

log() { echo "[e2e images] $*" >&2; }

# build_stand_in IMAGE CONTAINERFILE FILES...: podman build in a scratch context holding FILES.
build_stand_in() {
  local image="$1" containerfile="$2" context recipe
  shift 2
  recipe="$(cat "$here/stand-ins/$containerfile" "$@" | sha256sum | cut -c1-16)"
  if [[ "$("${PODMAN[@]}" image inspect --format '{{ index .Labels "petstore.recipe" }}' "$image" 2>/dev/null)" == "$recipe" ]]; then
    log "$image is up to date"
    return
  fi
  context="$(mktemp -d)"
  cp "$here/stand-ins/$containerfile" "$@" "$context/"
  log "building $image"
  "${PODMAN[@]}" build --quiet --pull=never --network host --ulimit nofile=20000:20000 --ulimit nproc=1000:1000 \
    --label "petstore.recipe=$recipe" -f "$context/$containerfile" -t "$image" "$context" >/dev/null
  rm -rf "$context"
}

start=$SECONDS
# Also builds localhost/petstore/debian:bookworm-minbase, the stand-ins' base.
PETSTORE_IMAGE_TAG="$tag" bash "$images_dir/build.sh" >&2
[[ -x "$FERRETDB_BIN" ]] || bash "$root/.ci/install-ferretdb.sh" >&2
build_stand_in "$REDIS_IMAGE" redis.Containerfile "$here/stand-ins/redis-server.sh" "$here/stand-ins/redis-entrypoint.sh"
build_stand_in "$FERRETDB_IMAGE" ferretdb.Containerfile "$FERRETDB_BIN"
log "images built in $((SECONDS - start)) s; importing into the cluster"
bash "$here/cluster.sh" load "localhost/petstore/gateway:$tag" "localhost/petstore/pet-service:$tag" "$REDIS_IMAGE" "$FERRETDB_IMAGE"
log "done in $((SECONDS - start)) s"
