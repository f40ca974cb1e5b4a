#!/usr/bin/env bash
# Builds, once per machine, what the cluster suite's single-node Kubernetes runs that Debian does
# not package: the Kubernetes v1.34 binaries, CoreDNS and kube-router (NetworkPolicy enforcement)
# from the Go module proxy, and a pause binary. The results are kept under
# $PETSTORE_E2E_CACHE/bin-<versions> (default /var/cache/petstore-e2e), so the next run on the same
# machine reuses them; a changed version builds into a new directory.
#
# Why from source: CI machines reach only package registries (no dl.k8s.io, no container
# registry). k8s.io/kubernetes is on the Go module proxy, but its go.mod points its staging modules
# (k8s.io/api, client-go, ...) at directories its zip does not hold, so a throwaway module requires
# it and replaces each staging module by its published v0.X.Y, then builds the commands.
# Exact versions only: the proxy may refuse the @v/list lookups that `@latest` makes.
#
# Prints the bin directory on its last line of stdout. Env knobs: PETSTORE_E2E_CACHE, K8S_VERSION,
# COREDNS_VERSION, KUBE_ROUTER_VERSION.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.34.4}"
COREDNS_VERSION="${COREDNS_VERSION:-v1.12.1}"
KUBE_ROUTER_VERSION="${KUBE_ROUTER_VERSION:-v2.1.0}"
CACHE="${PETSTORE_E2E_CACHE:-/var/cache/petstore-e2e}"
go_version="$(go env GOVERSION)"
bin="$CACHE/bin-k8s-$K8S_VERSION-coredns-$COREDNS_VERSION-kube-router-$KUBE_ROUTER_VERSION-$go_version"

log() { echo "[e2e build] $*" >&2; }

export GOWORK=off GOFLAGS="-buildvcs=false -mod=mod" CGO_ENABLED=0 GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"

# build_module NAME: builds the module in $CACHE/src/NAME (go.mod and main files already written)
# into $bin.part with the given packages and ldflags.
go_build() {
  local dir="$1" ldflags="$2"
  shift 2
  (cd "$dir" && go mod tidy >&2 && go build -trimpath -ldflags="-s -w $ldflags" -o "$bin.part/" "$@" >&2)
}

build_kubernetes() {
  local dir="$CACHE/src/kubernetes-$K8S_VERSION" staging="v0.${K8S_VERSION#v1.}"
  local minor="${K8S_VERSION#v1.}"
  minor="${minor%%.*}"
  mkdir -p "$dir"
  log "Kubernetes $K8S_VERSION (staging modules $staging) with $go_version"
  local mod
  mod="$(cd "$dir" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
  {
    echo "module petstore-e2e/kubernetes"
    echo
    echo "go 1.24.0"
    echo
    # The same GODEBUG defaults as Kubernetes' own build.
    grep '^godebug ' "$mod"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    sed -n 's#^[[:space:]]*\(k8s.io/[a-z-]*\) => ./staging/src/k8s.io/.*#\t\1 => \1 '"$staging"'#p' "$mod"
    echo ")"
  } >"$dir/go.mod"
  # Blank imports so that `go mod tidy` keeps every command's dependencies.
  {
    echo "//go:build tools"
    echo
    echo "package tools"
    echo
    echo "import ("
    for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl; do
      echo "	_ \"k8s.io/kubernetes/cmd/$c\""
    done
    echo ")"
  } >"$dir/tools.go"
  local v="k8s.io/component-base/version" cv="k8s.io/client-go/pkg/version" ldflags=""
  for pkg in "$v" "$cv"; do
    ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  (cd "$dir" && GOFLAGS="$GOFLAGS -tags=tools" go mod tidy >&2 && go build -trimpath -ldflags="-s -w $ldflags" -o "$bin.part/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet \
    k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/cmd/kubectl >&2)
}

# CoreDNS with only the plugins the cluster's Corefile uses (the full set takes much longer).
build_coredns() {
  local dir="$CACHE/src/coredns-$COREDNS_VERSION"
  mkdir -p "$dir"
  log "CoreDNS $COREDNS_VERSION"
  cat >"$dir/go.mod" <<GOMOD
module petstore-e2e/coredns

go 1.23.0

require github.com/coredns/coredns $COREDNS_VERSION
GOMOD
  cat >"$dir/main.go" <<'GO'
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() { coremain.Run() }
GO
  (cd "$dir" && go mod tidy >&2 && go build -trimpath -ldflags="-s -w" -o "$bin.part/coredns" . >&2)
}

# Built inside its own module, so with exactly the dependency versions its go.sum pins.
build_kube_router() {
  local dir="$CACHE/src/kube-router-$KUBE_ROUTER_VERSION" src
  log "kube-router $KUBE_ROUTER_VERSION"
  src="$(go mod download -json "github.com/cloudnativelabs/kube-router/v2@$KUBE_ROUTER_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
  rm -rf "$dir"
  mkdir -p "$CACHE/src"
  cp -R "$src" "$dir"
  chmod -R u+w "$dir"
  (cd "$dir" && go build -trimpath -ldflags="-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$KUBE_ROUTER_VERSION" \
    -o "$bin.part/kube-router" ./cmd/kube-router >&2)
}

# The pod sandbox's process: sleeps until SIGINT or SIGTERM, then exits 0 (no registry to pull
# registry.k8s.io/pause from).
build_pause() {
  local dir="$CACHE/src/pause"
  mkdir -p "$dir"
  log "pause"
  printf 'module petstore-e2e/pause\n\ngo 1.22\n' >"$dir/go.mod"
  cat >"$dir/main.go" <<'GO'
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
	<-c
}
GO
  (cd "$dir" && go build -trimpath -ldflags="-s -w" -o "$bin.part/pause" . >&2)
}

if [[ -x "$bin/kubelet" ]]; then
  log "cached: $bin"
else
  start=$(date +%s)
  rm -rf "$bin.part"
  mkdir -p "$bin.part"
  build_pause
  build_coredns
  build_kube_router
  build_kubernetes
  mv "$bin.part" "$bin"
  log "built in $(($(date +%s) - start)) s: $bin"
fi
echo "$bin"
