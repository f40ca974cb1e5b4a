#!/usr/bin/env bash
# .ci/as-new-machine.sh [DIR]: CI as a new machine runs it. Clones this checkout's HEAD into DIR
# (default: a new temporary directory) and runs .ci/run there with nothing that an earlier run
# left behind: the cluster's binaries (PETSTORE_E2E_CACHE), Go's build and module caches (GOCACHE,
# GOMODCACHE), npm's and pip's caches point at new empty directories; podman's containers and
# images are removed, and so are the binaries .ci/run builds (FerretDB, kubectl, grpc-go's interop
# server), the Schemathesis and Python gRPC venvs and tsx's compile cache. The system packages
# .ci/run installs with apt stay (installing them is the first step, about a minute, and the same
# on every run). Run as root, on a machine where nothing else uses podman or a cluster meanwhile.
# Exits with .ci/run's exit code; its output is in DIR/ci.log.
set -euo pipefail
source_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:-$(mktemp -d -t petstore-new-machine.XXXXXX)}"
caches="$(mktemp -d -t petstore-new-machine-caches.XXXXXX)"

git clone --quiet "$source_dir" "$dir/repo"
echo "clone of $(git -C "$dir/repo" rev-parse --short HEAD) in $dir/repo; empty caches in $caches"

if command -v podman >/dev/null 2>&1; then
  podman rm --all --force >/dev/null 2>&1 || true
  podman rmi --all --force >/dev/null 2>&1 || true
fi
rm -f /usr/local/bin/ferretdb /usr/local/bin/kubectl /usr/local/bin/grpc-interop-server
rm -rf /usr/local/share/grpc-interop
rm -rf "${TMPDIR:-/tmp}"/petstore-schemathesis-* "${TMPDIR:-/tmp}"/petstore-python-grpc-* "${TMPDIR:-/tmp}"/tsx-*
mkdir -p "$caches/e2e" "$caches/gocache" "$caches/gomodcache" "$caches/npm" "$caches/pip"

cd "$dir/repo"
set +e
PETSTORE_E2E_CACHE="$caches/e2e" GOCACHE="$caches/gocache" GOMODCACHE="$caches/gomodcache" npm_config_cache="$caches/npm" PIP_CACHE_DIR="$caches/pip" \
  bash .ci/run >"$dir/ci.log" 2>&1
status=$?
set -e
grep '^=== .*: [0-9]* s ===$' "$dir/ci.log" || true
echo ".ci/run exited $status after the steps above (log: $dir/ci.log)"
# The module cache is read-only; what a run built stays only in $caches, removed here.
chmod -R u+w "$caches" 2>/dev/null || true
rm -rf "$caches"
exit "$status"
