#!/usr/bin/env bash
# Builds both service images from their Dockerfiles, as they are, with podman on a machine without
# a Docker daemon or a registry (CI, and the cluster suite in deploy/e2e/, which loads them into
# containerd):
#
#   deploy/images/build.sh [<tag>]
#   localhost/petstore/gateway:<tag>
#   localhost/petstore/pet-service:<tag>      <tag>: the argument, else $PETSTORE_IMAGE_TAG, else e2e
#
# podman's image store is the machine's: checkouts that build at the same time on one machine
# need tags of their own, or each runs what the other built last.
#
# First the Dockerfiles' base, node:<version>-bookworm-slim, is built here when missing
# (base-image.sh: a stand-in tagged with the official name, cached between runs), then both
# images with --pull=never; podman's layer cache makes a second run with unchanged sources take
# seconds. Last, one line per image on stdout, "<image> <size> MB (<size> MB above <base>)":
# uncompressed, as `podman images` shows it, and the part the Dockerfile adds. Progress goes to
# stderr.
#
# The build stages' `npm ci` reaches the registry through whatever TLS interception the machine
# has: it trusts the host's CA bundle (NODE_EXTRA_CA_CERTS, else /etc/ssl/certs/ca-certificates.crt)
# through a build secret, which no layer keeps. A plain `docker build` (docs/deploy.md) needs none
# of this.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
LOG_NAME=build-images
# shellcheck source=lib.sh
source "$here/lib.sh"

TAG="${1:-${PETSTORE_IMAGE_TAG:-e2e}}"
SERVICES=(gateway pet-service)

take_images_lock
base="$(bash "$here/base-image.sh")"

# The Dockerfiles' installs read an npmrc given as the build secret "npmrc": here, one that trusts
# the host's CA bundle (npm's `ca`, one PEM per entry), for a registry reached through a
# TLS-intercepting proxy. A build secret is in no layer of any stage.
secret=()
ca_bundle="${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}"
if [[ -r "$ca_bundle" ]]; then
  npmrc="$(mktemp /var/tmp/petstore-npmrc.XXXXXX)"
  trap 'rm -f "$npmrc"' EXIT
  awk '/-----BEGIN CERTIFICATE-----/ { pem = $0; next }
       pem != "" { pem = pem "\\n" $0 }
       /-----END CERTIFICATE-----/ { print "ca[]=\"" pem "\""; pem = "" }' "$ca_bundle" >"$npmrc"
  secret=(--secret "id=npmrc,src=$npmrc")
fi

for service in "${SERVICES[@]}"; do
  image="localhost/petstore/$service:$TAG"
  previous="$("${PODMAN[@]}" image inspect --format '{{ .Id }}' "$image" 2>/dev/null || true)"
  started=$SECONDS
  log "building $image from $service/Dockerfile"
  quietly "${PODMAN[@]}" build --pull=never "${PODMAN_ULIMITS[@]}" "${secret[@]}" \
    --file "$root/$service/Dockerfile" --tag "$image" "$root"
  log "$image built in $((SECONDS - started)) s"
  remove_if_untagged "$previous"
done

for service in "${SERVICES[@]}"; do
  image="localhost/petstore/$service:$TAG"
  bytes="$(image_bytes "$image")"
  echo "$image $((bytes / 1000000)) MB ($(((bytes - $(image_bytes "$base")) / 1000000)) MB above $base)"
done
