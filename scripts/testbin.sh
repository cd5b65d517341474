#!/usr/bin/env bash
# Builds (once) the real etcd, kube-apiserver and kube-controller-manager the integration tests
# run against, from the Go module proxy.
#
#   bash scripts/testbin.sh                          prints the directory holding etcd and
#                                                    kube-apiserver (use it as KUBEBUILDER_ASSETS)
#   bash scripts/testbin.sh kubectl                  prints the path of a kubectl of the same version,
#                                                    building it when missing (.ci/run puts it on
#                                                    PATH where the machine has none that works: the
#                                                    install test runs the README's kubeconfig recipe)
#   bash scripts/testbin.sh kube-controller-manager  prints the kube-controller-manager's path,
#                                                    building it when missing (only the
#                                                    garbage-collector test runs it; asked for
#                                                    apart, so a failing build costs that test only
#                                                    and is not retried by every other caller)
#
# The binaries are cached outside the work tree, keyed by version, so a second run is instant.
# If KUBEBUILDER_ASSETS already points at a directory with etcd and kube-apiserver, those are used.
# envtest asset directories normally lack kube-controller-manager: it is taken from
# $KUBEBUILDER_ASSETS/kube-controller-manager when present, else from (or built into) the cache.
set -euo pipefail

K8S_VERSION="${KEELSON_K8S_VERSION:-1.35.4}"
ETCD_VERSION="${KEELSON_ETCD_VERSION:-3.6.16}"
CACHE="${KEELSON_TESTBIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/keelson-testbin}"
OUT="$CACHE/k8s-v$K8S_VERSION-etcd-v$ETCD_VERSION"

mode="${1:-all}"
case "$mode" in
  all | kube-controller-manager | kubectl) ;;
  *) echo "testbin: unknown argument \"$mode\" (expected none, kube-controller-manager or kubectl)" >&2; exit 2 ;;
esac

have_go() {
  command -v go >/dev/null || { echo "testbin: Go is needed to build $1 (or put $1 in \$KUBEBUILDER_ASSETS)" >&2; exit 3; }
  export GOTOOLCHAIN=local GOFLAGS='-mod=mod -buildvcs=false' CGO_ENABLED=0
  mkdir -p "$OUT" "$CACHE/src"
}

minor="${K8S_VERSION#*.}"; minor="${minor%%.*}"
staging_version="0.${K8S_VERSION#*.}"

# A throwaway module requiring k8s.io/kubernetes. k8s.io/kubernetes requires its staging modules at
# v0.0.0 and replaces them locally; a consumer must point each at its published tag
# (kubernetes/kubernetes#79384). kube-apiserver and kube-controller-manager share this module set.
# Each step checks its own status: this runs where `set -e` may be off (the left of `||`).
kubernetes_module() {
  rm -rf "$1" && mkdir -p "$1" && cd "$1" || return 1
  go mod init example.invalid/kubernetes-build >/dev/null 2>&1 || return 1
  go mod edit -go=1.25.0 -godebug=default=go1.25 -require="k8s.io/kubernetes@v$K8S_VERSION" || return 1
  for m in api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider \
    cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api \
    cri-client csi-translation-lib dynamic-resource-allocation endpointslice externaljwt kms \
    kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics \
    mount-utils pod-security-admission sample-apiserver sample-cli-plugin sample-controller streaming; do
    go mod edit -replace="k8s.io/$m=k8s.io/$m@v$staging_version" || return 1
  done
}

kubernetes_ldflags() {
  local ldf="-s -w" p
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf="$ldf -X $p.gitVersion=v$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  echo "$ldf"
}

# Builds one k8s.io/kubernetes command into $OUT under a temporary name unique to this process,
# then moves it in place, so other processes using $OUT never see a half-written binary (a failed
# `go build` writes no output file). `nice`: the build takes minutes of every core.
build_kubernetes_command() {
  local name="$1" tmp="$OUT/$1.tmp.$$"
  have_go "$name"
  # a build killed or failed half-way leaves no temporary file behind
  trap 'rm -f "$tmp"' EXIT
  (
    kubernetes_module "$CACHE/src/$name-$K8S_VERSION" &&
      nice go build -trimpath -ldflags "$(kubernetes_ldflags)" -o "$tmp" "k8s.io/kubernetes/cmd/$name"
  ) >&2 || exit 1
  mv "$tmp" "$OUT/$name" || exit 1
  trap - EXIT
}

# The kube-controller-manager's path, building it into the cache when neither
# $KUBEBUILDER_ASSETS nor the cache has one. A lock keeps parallel callers from building twice.
controller_manager() {
  if [ -n "${KUBEBUILDER_ASSETS:-}" ] && [ -x "$KUBEBUILDER_ASSETS/kube-controller-manager" ]; then
    echo "$KUBEBUILDER_ASSETS/kube-controller-manager"
    return
  fi
  if [ ! -x "$OUT/kube-controller-manager" ]; then
    have_go kube-controller-manager
    exec 9>"$CACHE/kube-controller-manager-$K8S_VERSION.lock"
    flock 9
    [ -x "$OUT/kube-controller-manager" ] || build_kubernetes_command kube-controller-manager
    flock -u 9
  fi
  echo "$OUT/kube-controller-manager"
}

if [ "$mode" = kube-controller-manager ]; then
  controller_manager
  exit 0
fi

if [ "$mode" = kubectl ]; then
  if [ ! -x "$OUT/kubectl" ]; then
    have_go kubectl
    exec 9>"$CACHE/kubectl-$K8S_VERSION.lock"
    flock 9
    [ -x "$OUT/kubectl" ] || build_kubernetes_command kubectl
    flock -u 9
  fi
  echo "$OUT/kubectl"
  exit 0
fi

if [ -n "${KUBEBUILDER_ASSETS:-}" ] && [ -x "$KUBEBUILDER_ASSETS/kube-apiserver" ] && [ -x "$KUBEBUILDER_ASSETS/etcd" ]; then
  echo "$KUBEBUILDER_ASSETS"
  exit 0
fi

if [ ! -x "$OUT/etcd" ]; then
  have_go etcd
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

[ -x "$OUT/kube-apiserver" ] || build_kubernetes_command kube-apiserver

echo "$OUT"
