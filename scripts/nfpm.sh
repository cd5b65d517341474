#!/usr/bin/env bash
# Installs (once) nfpm, the packager that builds Keelson's .deb and .rpm (scripts/package.sh),
# from the Go module proxy, and prints the path of the `nfpm` binary.
#
#   bash scripts/nfpm.sh        prints .../nfpm-v2.45.2/nfpm
#
# The binary is cached outside the work tree, keyed by version, so a second run is instant. A
# lock keeps parallel callers from building twice; a half-built binary is never used (it is
# built under a temporary name and moved in place).
set -euo pipefail

NFPM_VERSION="${KEELSON_NFPM_VERSION:-v2.45.2}"
CACHE="${KEELSON_NFPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/keelson-nfpm}"
OUT="$CACHE/nfpm-$NFPM_VERSION"

if [ ! -x "$OUT/nfpm" ]; then
  command -v go >/dev/null || { echo "nfpm: Go is needed to build nfpm $NFPM_VERSION" >&2; exit 3; }
  mkdir -p "$OUT"
  exec 9>"$OUT.lock"
  flock 9
  if [ ! -x "$OUT/nfpm" ]; then
    tmp="$OUT/.build.$$"
    trap 'rm -rf "$tmp"' EXIT
    # GOBIN: `go install` writes the binary there; nice: the build takes every core for a while
    GOTOOLCHAIN=local GOFLAGS='-buildvcs=false' CGO_ENABLED=0 GOBIN="$tmp" \
      nice go install "github.com/goreleaser/nfpm/v2/cmd/nfpm@$NFPM_VERSION" >&2 || {
      echo "nfpm: go install github.com/goreleaser/nfpm/v2/cmd/nfpm@$NFPM_VERSION failed" >&2
      exit 1
    }
    mv "$tmp/nfpm" "$OUT/nfpm"
  fi
  flock -u 9
fi
echo "$OUT/nfpm"
