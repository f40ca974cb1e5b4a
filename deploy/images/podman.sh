#!/usr/bin/env bash
# podman as the project's scripts and container suites run it, where `docker` stands in the docs:
# with runc, and with explicit rlimits on `run`, `create` and `build` (lib.sh says why).
#   deploy/images/podman.sh run --rm localhost/petstore/gateway:e2e ...
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
case "${1:-}" in
  run | create | build)
    command="$1"
    shift
    exec "${PODMAN[@]}" "$command" "${PODMAN_ULIMITS[@]}" "$@"
    ;;
  *) exec "${PODMAN[@]}" "$@" ;;
esac
