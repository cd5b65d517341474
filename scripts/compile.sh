#!/usr/bin/env bash
# `deno task compile`: one self-contained binary per target in dist/, with the narrowest
# permissions Keelson needs baked in (scripts/compile_permissions.txt says why each one) and the
# V8 flags of scripts/compile_v8_flags.txt, without a V8 code cache (--no-code-cache: the cache
# costs the long-running agent 3-6 MB of RSS to save ~20 ms once at start, and under systemd's
# ProtectSystem the binary has nowhere to write it; tests/integration/_harness/permissions.ts
# runs tests and benchmarks the same way).
#
# It compiles the bundle (`deno task bundle`, dist/keelson.js), not main.ts: the bundle is the
# file tests/integration/bundle_test.ts proves self-contained, it carries no npm tree into the
# binary, and `deno compile main.ts` overflowed its stack on this project with Deno 2.9.6.
#
# `deno compile` downloads its runtime (denort) for each target unless DENORT_BIN names a local
# one; set it on machines without internet access. DENORT_BIN is one runtime for one target, so
# with it only that target is built (TARGET_FOR_DENORT_BIN, default this machine's).
#   TARGETS="x86_64-unknown-linux-gnu" deno task compile     # one target only
#   DENORT_BIN=/opt/denort-2.9.6 deno task compile            # offline, this machine's target
set -euo pipefail
cd "$(dirname "$0")/.."

targets="${TARGETS:-x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu}"
mapfile -t perms < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' scripts/compile_permissions.txt | grep -v '^$')
mapfile -t v8flags < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' scripts/compile_v8_flags.txt | grep -v '^$')
v8flags_arg=$(IFS=,; echo "${v8flags[*]}")

if [ -n "${DENORT_BIN:-}" ]; then
  if [ ! -x "$DENORT_BIN" ]; then
    echo "compile: DENORT_BIN=\"$DENORT_BIN\" is not an executable file" >&2
    exit 1
  fi
  export DENORT_BIN
  denort_target="${TARGET_FOR_DENORT_BIN:-$(deno eval --no-config 'console.log(Deno.build.target)')}"
fi

mkdir -p dist
deno bundle --quiet --output dist/keelson.js main.ts
bash scripts/stamp_version.sh dist/keelson.js
built=0
for target in $targets; do
  suffix="${target%%-*}"
  if [ -n "${DENORT_BIN:-}" ] && [ "$target" != "$denort_target" ]; then
    echo "compile: DENORT_BIN is a runtime for $denort_target; skipping $target" >&2
    continue
  fi
  deno compile --quiet --no-config --no-check --no-code-cache "${perms[@]}" ${v8flags_arg:+"--v8-flags=$v8flags_arg"} \
    --target "$target" --output "dist/keelson-$suffix" dist/keelson.js
  echo "dist/keelson-$suffix"
  built=$((built + 1))
done
if [ "$built" -eq 0 ]; then
  echo "compile: nothing built (targets: $targets)" >&2
  exit 1
fi
if [ -e "dist/keelson-$(uname -m)" ]; then ln -sf "keelson-$(uname -m)" dist/keelson; fi
