#!/usr/bin/env bash
# Builds localhost/petstore/debian:bookworm-minbase, a Debian 12 image made here from Debian's
# mirror, for machines that reach no container registry: the base of the Node stand-in
# (base-image.sh) and of any other stand-in (Redis from Debian's redis-server, for example).
#
# `debootstrap --variant=minbase bookworm` with the bookworm-updates and bookworm-security fixes
# applied, then trimmed the way Docker's debian:bookworm-slim is (no documentation, manual pages
# or translations, and dpkg told to skip them in later installs; no apt lists or caches), and
# without the host's resolv.conf or device nodes. Cached: nothing is done while the image carries
# the label this script's content gives it.
#
#   DEBIAN_MIRROR  default http://deb.debian.org/debian (security: http://deb.debian.org/debian-security)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LOG_NAME=debian-image
# shellcheck source=lib.sh
source "$here/lib.sh"

IMAGE=localhost/petstore/debian:bookworm-minbase
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SECURITY_MIRROR="${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
RECIPE="$(sha256sum <"$here/debian-image.sh" | cut -c1-16)"

take_images_lock
if [[ "$(image_label "$IMAGE" petstore.recipe)" == "$RECIPE" ]]; then
  log "$IMAGE is up to date (recipe $RECIPE)"
  exit 0
fi

for tool in debootstrap podman; do
  command -v "$tool" >/dev/null || { log "ERROR: $tool is missing (apt-get install $tool)"; exit 1; }
done

rootfs="$(mktemp -d /var/tmp/petstore-rootfs.XXXXXX)"
chmod 0755 "$rootfs"  # apt's _apt user downloads into it
cleanup() {
  # debootstrap mounts proc and sys in the target, and leaves them mounted when it fails.
  local mount
  for mount in $(awk -v root="$rootfs/" 'index($2, root) == 1 { print $2 }' /proc/mounts | sort -r); do
    umount -l "$mount" || true
  done
  rm -rf --one-file-system "$rootfs"
}
trap cleanup EXIT

started=$SECONDS
previous="$("${PODMAN[@]}" image inspect --format '{{ .Id }}' "$IMAGE" 2>/dev/null || true)"
mkdir -p "$PETSTORE_IMAGES_CACHE/debootstrap"
log "debootstrap --variant=minbase bookworm from $MIRROR"
quietly debootstrap --variant=minbase --cache-dir="$PETSTORE_IMAGES_CACHE/debootstrap" bookworm "$rootfs" "$MIRROR"

# Debian's own image lists the three suites in deb822 form.
rm -f "$rootfs/etc/apt/sources.list"
cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY_MIRROR
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF

# As debian:bookworm-slim: dpkg leaves documentation and translations out of every later install.
cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
cat >"$rootfs/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
echo 'Acquire::Languages "none";' >"$rootfs/etc/apt/apt.conf.d/docker-no-languages"
printf 'APT::AutoRemove::SuggestsImportant "false";\n' >"$rootfs/etc/apt/apt.conf.d/docker-autoremove-suggests"

log "applying bookworm-updates and bookworm-security"
cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
quietly chroot "$rootfs" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
  sh -c 'apt-get update && apt-get upgrade -y -o Dpkg::Options::=--force-confold'

(
  cd "$rootfs"
  find usr/share/doc -mindepth 1 -not -name copyright -not -type d -delete
  find usr/share/doc -mindepth 1 -type d -empty -delete
  rm -rf usr/share/man/* usr/share/groff/* usr/share/info/* usr/share/lintian/* usr/share/linda/* var/cache/man/*
  find usr/share/locale -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
  rm -rf var/lib/apt/lists/* var/cache/apt/* var/cache/debconf/*-old var/lib/dpkg/*-old
  find var/log -type f -delete
  # The runtime provides these; the host's must not leak into the image.
  : >etc/resolv.conf
  rm -f etc/hostname
  rm -rf dev/* proc/* sys/* tmp/* run/*
)

log "importing $IMAGE"
tar --numeric-owner --xattrs -C "$rootfs" -c . \
  | "${PODMAN[@]}" import --quiet \
      --change 'CMD ["bash"]' \
      --change "LABEL petstore.recipe=$RECIPE" \
      --message "debootstrap --variant=minbase bookworm $MIRROR" \
      - "$IMAGE" >/dev/null
log "$IMAGE built in $((SECONDS - started)) s, $(($(image_bytes "$IMAGE") / 1000000)) MB"
remove_if_untagged "$previous"
