#!/usr/bin/env bash
# Builds both service images from their Dockerfiles, as they are, with podman on a machine without
# a Docker daemon or a registry (CI, and the cluster suite in deploy/e2e/, which loads them into
# containerd):
#
#   localhost/petstore/gateway:<tag>
#   localhost/petstore/pet-service:<tag>      <tag>: $PETSTORE_IMAGE_TAG, default e2e
#
# First the Dockerfiles' base, node:<version>-bookworm-slim, is built here when missing
# (base-image.sh: a stand-in tagged with the official name, cached between runs), then both
# images with --pull=never; podman's layer cache makes a second run with unchanged sources take
# seconds. Last, one line per image on stdout: "<image> <size in MB>" (uncompressed, as
# `podman images` shows it; base included). Progress goes to stderr.
#
# The build stages' `npm ci` reaches the registry through whatever TLS interception the machine
# has: the host's CA bundle (NODE_EXTRA_CA_CERTS, else /etc/ssl/certs/ca-certificates.crt) is
# mounted read-only into every RUN step, with an npmrc naming it, and neither is in any layer.
# A plain `docker build` (docs/deploy.md) needs none of this.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
LOG_NAME=build-images
# shellcheck source=lib.sh
source "$here/lib.sh"

TAG="${PETSTORE_IMAGE_TAG:-e2e}"
SERVICES=(gateway pet-service)

take_images_lock
bash "$here/base-image.sh"

build_mounts=()
ca_bundle="${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}"
if [[ -r "$ca_bundle" ]]; then
  npmrc="$(mktemp /var/tmp/petstore-npmrc.XXXXXX)"
  trap 'rm -f "$npmrc"' EXIT
  echo 'cafile=/run/petstore-build/ca-certificates.crt' >"$npmrc"
  chmod 0644 "$npmrc"
  # npm's global config file, for a node installed in /usr/local as the node images have it.
  build_mounts=(-v "$ca_bundle:/run/petstore-build/ca-certificates.crt:ro" -v "$npmrc:/usr/local/etc/npmrc:ro")
fi

for service in "${SERVICES[@]}"; do
  image="localhost/petstore/$service:$TAG"
  previous="$("${PODMAN[@]}" image inspect --format '{{ .Id }}' "$image" 2>/dev/null || true)"
  started=$SECONDS
  log "building $image from $service/Dockerfile"
  quietly "${PODMAN[@]}" build --pull=never "${PODMAN_ULIMITS[@]}" "${build_mounts[@]}" \
    --file "$root/$service/Dockerfile" --tag "$image" "$root"
  log "$image built in $((SECONDS - started)) s"
  remove_if_untagged "$previous"
done

for service in "${SERVICES[@]}"; do
  image="localhost/petstore/$service:$TAG"
  echo "$image $(($(image_bytes "$image") / 1000000)) MB"
done
