#!/usr/bin/env bash
# Build and install kubectl (with its built-in kustomize) from the Go module proxy, for the
# deploy/ tests that render the overlays with `kubectl kustomize`.
#
# Idempotent: if ${KUBECTL_BIN:-/usr/local/bin/kubectl} already exists and runs, nothing is done.
# .ci/run calls it only when no kubectl is on PATH.
#
# Why build it: CI machines reach only the npm, PyPI, Go module proxy, Debian and Maven
# registries, not dl.k8s.io or the Kubernetes apt repository; and Debian 12's kubernetes-client
# is kubectl 1.20, whose built-in kustomize (v2) predates the kustomization fields deploy/ uses
# (labels, patches). kubectl's own main package lives in k8s.io/kubernetes, whose go.mod points
# its staging modules at directories that the module zip does not contain, so it cannot be built
# from the proxy; but that main is five lines around k8s.io/kubectl's NewDefaultKubectlCommand,
# so a throwaway module that requires k8s.io/kubectl at an exact version builds the same binary.
# Exact versions only: the proxy may refuse the @v/list lookups that `@latest` needs.
#
# Env knobs:
#   KUBECTL_BIN      install path                  (default /usr/local/bin/kubectl)
#   KUBECTL_VERSION  k8s.io/kubectl module version (default v0.37.2, i.e. kubectl v1.37.2)
set -euo pipefail

KUBECTL_BIN="${KUBECTL_BIN:-/usr/local/bin/kubectl}"
KUBECTL_VERSION="${KUBECTL_VERSION:-v0.37.2}"

INSTALL_NAME=install-kubectl
# shellcheck source=lib/install-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/install-common.sh"

exit_if_installed "$KUBECTL_BIN" version --client
start_go_build kubectl
log "building kubectl from k8s.io/kubectl@$KUBECTL_VERSION with $(go version)"

# The same main as k8s.io/kubernetes/cmd/kubectl/kubectl.go.
cat >"$work/main.go" <<'EOF'
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"

	_ "k8s.io/client-go/plugin/pkg/client/auth"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
EOF

(
  cd "$work"
  go mod init kubectl-build >/dev/null 2>&1
  go get "k8s.io/kubectl@$KUBECTL_VERSION"
  go mod tidy
  # kubectl's version command reads these; the module version v0.X.Y is Kubernetes v1.X.Y.
  git_version="v1.${KUBECTL_VERSION#v0.}"
  log "go build (takes a few minutes on 2 cores when the caches are cold)"
  go build -trimpath -ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$git_version \
    -X k8s.io/client-go/pkg/version.gitVersion=$git_version" -o "$work/kubectl" .
)

"$work/kubectl" version --client >/dev/null
"$work/kubectl" kustomize --help >/dev/null

install_built "$work/kubectl" "$KUBECTL_BIN"
"$KUBECTL_BIN" version --client
