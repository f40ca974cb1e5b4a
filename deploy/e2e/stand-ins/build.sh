#!/usr/bin/env bash
# Builds the stand-ins for the third-party images that no registry here can serve, into podman's
# store, and prints their names, one a line: the Redis image (redis:7.4.5-bookworm, from Debian
# 12's redis-server, redis.Containerfile) and, for mongo:8, FerretDB (ferretdb.Containerfile).
# Both are built FROM localhost/petstore/debian:bookworm-minbase, which deploy/images/build.sh
# makes: run that first. Each is rebuilt only when its recipe changes (a label holds its hash).
# Used by the cluster suite (deploy/e2e/images.sh) and the container suite
# (deploy/test/containers.test.ts).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
LOG_NAME=stand-ins
# shellcheck source=../../images/lib.sh
source "$root/deploy/images/lib.sh"
FERRETDB_BIN="${FERRETDB_BIN:-/usr/local/bin/ferretdb}"
REDIS_IMAGE=docker.io/library/redis:7.4.5-bookworm
FERRETDB_IMAGE=localhost/petstore-e2e/ferretdb:v1.24.0

# build_stand_in IMAGE CONTAINERFILE FILES...: podman build in a scratch context holding FILES.
build_stand_in() {
  local image="$1" containerfile="$2" context recipe
  shift 2
  recipe="$(cat "$here/$containerfile" "$@" | sha256sum | cut -c1-16)"
  if [[ "$(image_label "$image" petstore.recipe)" == "$recipe" ]]; then
    log "$image is up to date"
    return
  fi
  context="$(mktemp -d)"
  cp "$here/$containerfile" "$@" "$context/"
  log "building $image"
  quietly "${PODMAN[@]}" build --pull=never --network host "${PODMAN_ULIMITS[@]}" \
    --label "petstore.recipe=$recipe" -f "$context/$containerfile" -t "$image" "$context"
  rm -rf "$context"
}

take_images_lock
[[ -x "$FERRETDB_BIN" ]] || bash "$root/.ci/install-ferretdb.sh" >&2
build_stand_in "$REDIS_IMAGE" redis.Containerfile "$here/redis-server.sh" "$here/redis-entrypoint.sh"
build_stand_in "$FERRETDB_IMAGE" ferretdb.Containerfile "$FERRETDB_BIN"
echo "$REDIS_IMAGE"
echo "$FERRETDB_IMAGE"
