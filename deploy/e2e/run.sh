#!/usr/bin/env bash
# The cluster suite end to end, as CI runs it: builds (or reuses) the cluster's binaries, brings
# up the single-node Kubernetes, builds and imports the images, runs deploy/e2e/*.test.ts against
# both overlays, and tears everything down again, on failure too. Run from anywhere, as root.
# Extra arguments go to mocha (e.g. --grep production).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

step() { printf '[e2e] %s\n' "$*" >&2; }

started=$SECONDS
E2E_BIN="$(bash "$here/build.sh" | tail -n 1)"
export E2E_BIN
step "binaries ready in $((SECONDS - started)) s: $E2E_BIN"

trap 'status=$?; step "tearing down"; bash "$here/cluster.sh" down || status=1; exit $status' EXIT
up_started=$SECONDS
bash "$here/cluster.sh" up
step "cluster up in $((SECONDS - up_started)) s"
images_started=$SECONDS
bash "$here/images.sh"
step "images built and imported in $((SECONDS - images_started)) s"

REQUIRE_KUBERNETES=1 npx --no-install mocha --config deploy/e2e/.mocharc.json "$@"
