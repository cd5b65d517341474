#!/usr/bin/env bash
# Builds (once) the real etcd and kube-apiserver the integration tests run against, from the Go
# module proxy, and prints the directory holding them (use it as KUBEBUILDER_ASSETS).
#
# The binaries are cached outside the work tree, keyed by version, so a second run is instant.
# If KUBEBUILDER_ASSETS already points at a directory with both binaries, nothing is built.
set -euo pipefail

K8S_VERSION="${KEELSON_K8S_VERSION:-1.35.4}"
ETCD_VERSION="${KEELSON_ETCD_VERSION:-3.6.16}"
CACHE="${KEELSON_TESTBIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/keelson-testbin}"
OUT="$CACHE/k8s-v$K8S_VERSION-etcd-v$ETCD_VERSION"

if [ -n "${KUBEBUILDER_ASSETS:-}" ] && [ -x "$KUBEBUILDER_ASSETS/kube-apiserver" ] && [ -x "$KUBEBUILDER_ASSETS/etcd" ]; then
  echo "$KUBEBUILDER_ASSETS"
  exit 0
fi
if [ -x "$OUT/kube-apiserver" ] && [ -x "$OUT/etcd" ]; then
  echo "$OUT"
  exit 0
fi

command -v go >/dev/null || { echo "testbin: Go is needed to build kube-apiserver and etcd (or set KUBEBUILDER_ASSETS)" >&2; exit 3; }
export GOTOOLCHAIN=local GOFLAGS='-mod=mod -buildvcs=false' CGO_ENABLED=0
mkdir -p "$OUT" "$CACHE/src"

minor="${K8S_VERSION#*.}"; minor="${minor%%.*}"
staging_version="0.${K8S_VERSION#*.}"

if [ ! -x "$OUT/etcd" ]; then
  src="$CACHE/src/etcd-$ETCD_VERSION"
  rm -rf "$src"; mkdir -p "$src"
  (
    cd "$src"
    go mod init example.invalid/etcd-build >/dev/null 2>&1
    go mod edit -require="go.etcd.io/etcd/server/v3@v$ETCD_VERSION"
    go build -trimpath -ldflags "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=v$ETCD_VERSION" \
      -o "$OUT/etcd.tmp" go.etcd.io/etcd/server/v3
  ) >&2
  mv "$OUT/etcd.tmp" "$OUT/etcd"
fi

if [ ! -x "$OUT/kube-apiserver" ]; then
  src="$CACHE/src/kubernetes-$K8S_VERSION"
  rm -rf "$src"; mkdir -p "$src"
  (
    cd "$src"
    go mod init example.invalid/kube-apiserver-build >/dev/null 2>&1
    go mod edit -go=1.25.0 -godebug=default=go1.25 -require="k8s.io/kubernetes@v$K8S_VERSION"
    # k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them locally; a consumer
    # must point each at its published tag (kubernetes/kubernetes#79384).
    for m in api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider \
      cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api \
      cri-client csi-translation-lib dynamic-resource-allocation endpointslice externaljwt kms \
      kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics \
      mount-utils pod-security-admission sample-apiserver sample-cli-plugin sample-controller streaming; do
      go mod edit -replace="k8s.io/$m=k8s.io/$m@v$staging_version"
    done
    ldf="-s -w"
    for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ldf="$ldf -X $p.gitVersion=v$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
    done
    go build -trimpath -ldflags "$ldf" -o "$OUT/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
  ) >&2
  mv "$OUT/kube-apiserver.tmp" "$OUT/kube-apiserver"
fi

echo "$OUT"
