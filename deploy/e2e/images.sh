#!/usr/bin/env bash
# Builds every image the cluster suite runs and imports them into the cluster's containerd
# (deploy/e2e/cluster.sh must be up):
#   - the project's two images, by deploy/images/build.sh, tagged $E2E_IMAGE_TAG (default e2e) in
#     podman's store and imported as localhost/petstore/<service>:e2e, the name the test overlays
#     give: a checkout sharing the machine's podman store with another builds under a tag of its
#     own without editing the overlays;
#   - the stand-ins for the third-party images no registry here can serve (stand-ins/build.sh):
#     redis:7.4.5-bookworm (Debian 12's redis-server) and, for mongo:8, FerretDB (the overlay
#     patch in overlays/ferretdb/).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tag="${E2E_IMAGE_TAG:-e2e}"

log() { echo "[e2e images] $*" >&2; }

start=$SECONDS
# Also builds localhost/petstore/debian:bookworm-minbase, the stand-ins' base.
PETSTORE_IMAGE_TAG="$tag" bash "$root/deploy/images/build.sh" >&2
mapfile -t stand_ins < <(bash "$here/stand-ins/build.sh")
log "images built in $((SECONDS - start)) s; importing into the cluster"
bash "$here/cluster.sh" load "${stand_ins[@]}"
for service in gateway pet-service; do
  bash "$here/cluster.sh" load-as "localhost/petstore/$service:$tag" "localhost/petstore/$service:e2e"
done
log "done in $((SECONDS - start)) s"
