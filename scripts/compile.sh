#!/usr/bin/env bash
# `deno task compile`: one self-contained binary per target in dist/, with the narrowest
# permissions Keelson needs baked in. `deno compile` downloads its runtime (denort) unless
# DENORT_BIN names a local one; set it on machines without internet access.
#   TARGETS="x86_64-unknown-linux-gnu" deno task compile     # one target only
set -euo pipefail
cd "$(dirname "$0")/.."

targets="${TARGETS:-x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu}"
# Why each permission: net (API server, health server, apiserver probe), read (inventory,
# kubeconfig, keepalived pid file), write (keepalived config dir and Keelson's track files),
# env (KUBECONFIG, in-cluster variables), sys (hostname for the leader identity), run
# (`keepalived -t` before every reload, `ip` to observe VIPs, and signalling keepalived).
perms=(
  --allow-net
  --allow-read
  "--allow-write=/etc/keepalived,/run/keelson,/run/keepalived,/tmp"
  --allow-env
  "--allow-sys=hostname,osRelease"
  --allow-run
)
mkdir -p dist
for target in $targets; do
  suffix="${target%%-*}"
  if [ -n "${DENORT_BIN:-}" ] && [ "$target" != "$(deno eval 'console.log(Deno.build.target)')" ]; then
    echo "compile: DENORT_BIN is set but is for this machine's target; skipping $target" >&2
    continue
  fi
  deno compile "${perms[@]}" --target "$target" --output "dist/keelson-$suffix" main.ts
  echo "dist/keelson-$suffix"
done
if [ -e "dist/keelson-$(uname -m)" ]; then ln -sf "keelson-$(uname -m)" dist/keelson; fi
