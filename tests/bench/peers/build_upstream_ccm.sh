#!/usr/bin/env bash
# Builds (once) the stock upstream cloud-controller-manager with k8s.io/cloud-provider's `fake`
# provider (upstream_ccm/main.go) from the Go module proxy, and prints the binary's path.
# The binary is cached outside the work tree, keyed by the cloud-provider version and a hash of
# the Go sources, so a second run is instant (as scripts/testbin.sh caches kube-apiserver).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$here/upstream_ccm"
version="$(awk '/k8s.io\/cloud-provider /{print $2; exit}' "$src/go.mod")"
hash="$(cat "$src/main.go" "$src/go.mod" "$src/go.sum" | sha256sum | cut -c1-12)"
CACHE="${KEELSON_TESTBIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/keelson-testbin}"
OUT="$CACHE/upstream-ccm-$version-$hash"

if [ -x "$OUT/cloud-controller-manager" ]; then
  echo "$OUT/cloud-controller-manager"
  exit 0
fi
command -v go >/dev/null || { echo "peers: Go is needed to build the upstream cloud-controller-manager" >&2; exit 3; }
export GOTOOLCHAIN=local GOFLAGS='-mod=mod -buildvcs=false' CGO_ENABLED=0
mkdir -p "$OUT"
minor="${version#v0.}"; minor="${minor%%.*}"
ldf="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldf="$ldf -X $p.gitVersion=v1.${version#v0.} -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done
(cd "$src" && go build -trimpath -ldflags "$ldf" -o "$OUT/cloud-controller-manager.tmp" .) >&2
mv "$OUT/cloud-controller-manager.tmp" "$OUT/cloud-controller-manager"
echo "$OUT/cloud-controller-manager"
