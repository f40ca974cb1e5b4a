# Sourced by the scripts in deploy/images/: how they call podman on a machine without a Docker
# daemon or a registry, and how they cache an image between runs.
#
#   PETSTORE_IMAGES_CACHE  debootstrap's .deb cache and the lock (default /var/cache/petstore-images)
#
# podman runs with runc: crun, its default runtime, refuses hybrid cgroups ("cgroups in hybrid
# mode not supported"). podman's default rlimits (nofile 1048576) are above the hard limits a CI
# machine may have, and raising one is refused: every build and container gets explicit ones, at
# most the caller's hard limits.

PETSTORE_IMAGES_CACHE="${PETSTORE_IMAGES_CACHE:-/var/cache/petstore-images}"

_hard_nofile="$(ulimit -Hn)"
_hard_nproc="$(ulimit -Hu)"
[[ "$_hard_nofile" == unlimited || "$_hard_nofile" -gt 20000 ]] && _hard_nofile=20000
[[ "$_hard_nproc" == unlimited || "$_hard_nproc" -gt 4096 ]] && _hard_nproc=4096
# shellcheck disable=SC2034 # used by the scripts that source this file
PODMAN_ULIMITS=(--ulimit "nofile=$_hard_nofile:$_hard_nofile" --ulimit "nproc=$_hard_nproc:$_hard_nproc")
PODMAN=("${PODMAN_BIN:-podman}" --runtime /usr/sbin/runc)

log() { printf '[%s] %s\n' "${LOG_NAME:-images}" "$*" >&2; }

# Runs a command with its output kept aside, shown (the end of it) only when it fails.
quietly() {
  local out rc=0
  out="$(mktemp)"
  "$@" >"$out" 2>&1 || rc=$?
  ((rc == 0)) || tail -n 40 "$out" >&2
  rm -f "$out"
  return "$rc"
}

# The value of label $2 on image $1, or nothing when the image or the label is missing.
image_label() {
  "${PODMAN[@]}" image inspect --format "{{ index .Labels \"$2\" }}" "$1" 2>/dev/null | grep -v '^<no value>$' || true
}

# Removes image id $1 when it no longer has a name (a rebuild took it) and nothing uses it.
remove_if_untagged() {
  [[ -n "$1" ]] || return 0
  [[ "$("${PODMAN[@]}" image inspect --format '{{ len .RepoTags }}' "$1" 2>/dev/null)" == 0 ]] || return 0
  "${PODMAN[@]}" image rm "$1" >/dev/null 2>&1 || true
}

# Size of image $1 in bytes (the uncompressed layers it is made of).
image_bytes() {
  "${PODMAN[@]}" image inspect --format '{{ .Size }}' "$1"
}

# One build at a time on a machine: several checkouts (CI, the cluster suite) share podman's store.
# Holds the lock until the calling script exits; the scripts it runs inherit it.
take_images_lock() {
  [[ -n "${PETSTORE_IMAGES_LOCKED:-}" && -e "/proc/$PETSTORE_IMAGES_LOCKED" ]] && return
  mkdir -p "$PETSTORE_IMAGES_CACHE"
  exec {_images_lock_fd}>"$PETSTORE_IMAGES_CACHE/lock"
  if ! flock -n "$_images_lock_fd"; then
    log "waiting for another image build on this machine ($PETSTORE_IMAGES_CACHE/lock)"
    flock "$_images_lock_fd"
  fi
  export PETSTORE_IMAGES_LOCKED=$$
}
