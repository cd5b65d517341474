#!/usr/bin/env bash
# Writes the commit and build date into a bundle (src/version_info.ts's placeholders), so
# `keelson version` says which source a binary came from. Without git (or outside a work tree)
# the commit stays "unknown"; the date honours SOURCE_DATE_EPOCH for reproducible builds.
#   bash scripts/stamp_version.sh dist/keelson.js
set -euo pipefail
file="$1"
commit=unknown
if git -C "$(dirname "$0")/.." rev-parse --verify -q HEAD >/dev/null 2>&1; then
  commit=$(git -C "$(dirname "$0")/.." rev-parse HEAD)
  if ! git -C "$(dirname "$0")/.." diff --quiet HEAD -- 2>/dev/null; then commit="$commit-dirty"; fi
fi
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
  built=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
else
  built=$(date -u +%Y-%m-%dT%H:%M:%SZ)
fi
# both values are [0-9a-z-] and [0-9TZ:-]: nothing sed or JavaScript would read specially
[[ "$commit" =~ ^[0-9a-z-]+$ ]] || { echo "stamp_version: unexpected commit \"$commit\"" >&2; exit 1; }
grep -q '@@KEELSON_COMMIT@@' "$file" || { echo "stamp_version: no placeholder in $file" >&2; exit 1; }
sed -i -e "s/@@KEELSON_COMMIT@@/$commit/" -e "s/@@KEELSON_BUILD_DATE@@/$built/" "$file"
