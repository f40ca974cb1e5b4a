#!/usr/bin/env bash
# Build and install grpc-go's interop server (google.golang.org/grpc/interop/server) from the Go
# module proxy, with the test certificates it serves TLS with, for the unary transport's interop
# suite (proto/test/integration/transport/grpc-interop.test.ts): a gRPC server nobody here wrote.
#
# Idempotent: if ${GRPC_INTEROP_BIN} runs and ${GRPC_INTEROP_DIR} holds the certificates of the
# same version, nothing is done.
#
# Why the certificates are copied: with --use_tls the server reads testdata/server1.pem and
# server1.key through testdata.Path, a source path compiled into the binary, which -trimpath makes
# relative (and which would otherwise point into this machine's module cache). So the suite passes
# --tls_cert_file and --tls_key_file from GRPC_INTEROP_DIR: grpc-go's testdata/server1.pem and
# server1.key (DNS SANs *.test.google.fr, waterzooi.test.google.be, *.test.youtube.com) and
# testdata/ca.pem, the CA they chain to, which the client trusts. The module's testdata/x509 files
# are other tests' certificates, not the interop server's.
#
# `go install pkg@version` needs only the exact version from the proxy; should the proxy refuse it
# (install-ferretdb.sh met a 403 on the @v/list lookup), a throwaway module that requires the exact
# version builds the same package.
#
# Env knobs:
#   GRPC_INTEROP_BIN      install path                        (default /usr/local/bin/grpc-interop-server)
#   GRPC_INTEROP_DIR      where the certificates go           (default /usr/local/share/grpc-interop)
#   GRPC_INTEROP_VERSION  google.golang.org/grpc module tag   (default v1.85.0)
set -euo pipefail

GRPC_INTEROP_BIN="${GRPC_INTEROP_BIN:-/usr/local/bin/grpc-interop-server}"
GRPC_INTEROP_DIR="${GRPC_INTEROP_DIR:-/usr/local/share/grpc-interop}"
GRPC_INTEROP_VERSION="${GRPC_INTEROP_VERSION:-v1.85.0}"
MODULE="google.golang.org/grpc"
PACKAGE="$MODULE/interop/server"
FILES=(server1.pem server1.key ca.pem)

INSTALL_NAME=install-grpc-interop
# shellcheck source=lib/install-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/install-common.sh"

# The server has no --version (-h prints its flags and exits 0): the version is the one written
# beside the certificates.
installed() {
  [[ -x "$GRPC_INTEROP_BIN" ]] && "$GRPC_INTEROP_BIN" -h 2>/dev/null || return 1
  [[ "$(cat "$GRPC_INTEROP_DIR/VERSION" 2>/dev/null)" == "$GRPC_INTEROP_VERSION" ]] || return 1
  for file in "${FILES[@]}"; do [[ -s "$GRPC_INTEROP_DIR/$file" ]] || return 1; done
}
if installed; then
  log "already installed: $GRPC_INTEROP_BIN and $GRPC_INTEROP_DIR ($GRPC_INTEROP_VERSION)"
  exit 0
fi

start_go_build grpc-interop
log "building $PACKAGE@$GRPC_INTEROP_VERSION with $(go version)"

if ! (cd "$work" && GOBIN="$work/bin" go install -trimpath -ldflags='-s -w' "$PACKAGE@$GRPC_INTEROP_VERSION"); then
  log "go install failed (above); building from a throwaway module that requires $MODULE@$GRPC_INTEROP_VERSION"
  (
    cd "$work"
    go mod init grpc-interop-build >/dev/null 2>&1
    go mod edit -require="$MODULE@$GRPC_INTEROP_VERSION"
    go build -trimpath -ldflags='-s -w' -o "$work/bin/server" "$PACKAGE"
  )
fi
"$work/bin/server" -h 2>/dev/null

src_dir="$(module_dir "$MODULE@$GRPC_INTEROP_VERSION")"
log "installing the test certificates (${FILES[*]}) to $GRPC_INTEROP_DIR"
mkdir -p "$GRPC_INTEROP_DIR"
for file in "${FILES[@]}"; do install -m 0644 "$src_dir/testdata/$file" "$GRPC_INTEROP_DIR/$file"; done
echo "$GRPC_INTEROP_VERSION" >"$GRPC_INTEROP_DIR/VERSION"

install_built "$work/bin/server" "$GRPC_INTEROP_BIN"
