#!/usr/bin/env bash
# Installs (once) OpenStack's Redfish emulator, sushy-tools, from PyPI into a Python venv, and
# prints the path of its `sushy-emulator`. The BMC integration tests run it (`--fake`: systems
# from a config file, no libvirt) as the Redfish server Keelson polls; the venv's `python3`
# beside it hashes the test's basic-auth password (bcrypt, which sushy-tools depends on).
#
#   bash scripts/sushy.sh        prints .../venv/bin/sushy-emulator
#
# The venv is cached outside the work tree, keyed by version, so a second run is instant. pip runs
# with the caller's environment untouched: a proxy and its CA (PIP_CERT, PIP_INDEX_URL, ...) come
# from there. A lock keeps parallel callers from installing twice; a half-made venv is never used
# (the `.complete` marker is written last).
set -euo pipefail

SUSHY_VERSION="${KEELSON_SUSHY_VERSION:-2.2.0}"
CACHE="${KEELSON_SUSHY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/keelson-sushy}"
VENV="$CACHE/sushy-tools-$SUSHY_VERSION"

if [ ! -f "$VENV/.complete" ]; then
  command -v python3 >/dev/null || { echo "sushy: python3 is needed (apt-get install python3 python3-venv)" >&2; exit 3; }
  mkdir -p "$CACHE"
  exec 9>"$CACHE/sushy-tools-$SUSHY_VERSION.lock"
  flock 9
  if [ ! -f "$VENV/.complete" ]; then
    rm -rf "$VENV"
    python3 -m venv "$VENV" >&2 || {
      echo "sushy: cannot make a venv (Debian: apt-get install python3-venv)" >&2
      rm -rf "$VENV"
      exit 3
    }
    "$VENV/bin/pip" install --quiet "sushy-tools==$SUSHY_VERSION" >&2 || {
      echo "sushy: pip could not install sushy-tools==$SUSHY_VERSION" >&2
      rm -rf "$VENV"
      exit 1
    }
    touch "$VENV/.complete"
  fi
  flock -u 9
fi

echo "$VENV/bin/sushy-emulator"
