# shellcheck shell=bash
# What .ci/install-ferretdb.sh, .ci/install-kubectl.sh and .ci/install-grpc-interop.sh share: each
# builds a Go binary from the Go module proxy (exact versions only: the proxy may refuse the
# @v/list lookups that `@latest` and `go install` make), in a throwaway directory, and installs it
# unless it already runs.
#
# Source it after setting INSTALL_NAME (the log prefix):
#   INSTALL_NAME=install-x; source "$(dirname "${BASH_SOURCE[0]}")/lib/install-common.sh"

log() { echo "[${INSTALL_NAME:?}] $*"; }

# exit_if_installed BIN CHECK_ARGS...: exits 0 when BIN exists and `BIN CHECK_ARGS...` succeeds.
exit_if_installed() {
  local bin="$1" out
  shift
  if [[ -x "$bin" ]] && out="$("$bin" "$@" 2>/dev/null)"; then
    log "already installed: $bin (${out%%$'\n'*})"
    exit 0
  fi
}

# start_go_build NAME: checks for go, sets a build environment no outer go.work or GOFLAGS can
# change, and makes $work, a temporary directory removed on exit. $start is when it began.
start_go_build() {
  if ! command -v go >/dev/null 2>&1; then
    log "ERROR: 'go' is not on PATH; install Go (>= 1.22) first" >&2
    exit 1
  fi
  start=$(date +%s)
  export GOWORK=off
  export GOFLAGS="-buildvcs=false -mod=mod"
  export CGO_ENABLED=0
  # When the local Go is older than the module needs, let the go command fetch a toolchain.
  export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
  work="$(mktemp -d "${TMPDIR:-/tmp}/$1-build.XXXXXX")"
  # The module cache is read-only, and copies of it are too.
  trap 'chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work"' EXIT
}

# module_dir MODULE@VERSION: downloads that exact module version and prints its directory in the
# module cache (read-only); fails, saying why, when it cannot. Call it after start_go_build.
module_dir() {
  local dir
  if ! (cd "$work" && go mod download -json "$1") >"$work/download.json"; then
    log "ERROR: could not download $1:" >&2
    cat "$work/download.json" >&2
    return 1
  fi
  dir="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' "$work/download.json")"
  if [[ -z "$dir" || ! -d "$dir" ]]; then
    log "ERROR: no module directory in 'go mod download' output:" >&2
    cat "$work/download.json" >&2
    return 1
  fi
  echo "$dir"
}

# install_built BUILT BIN: installs the built binary at BIN and says how long it all took.
install_built() {
  log "installing to $2"
  install -D -m 0755 "$1" "$2"
  log "done in $(($(date +%s) - start))s"
}
