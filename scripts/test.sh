#!/usr/bin/env bash
# `deno task test`: unit, integration (real etcd + kube-apiserver) and e2e (real keepalived in
# network namespaces) tests. Integration binaries come from $KUBEBUILDER_ASSETS or are built once
# by scripts/testbin.sh; without them (or without root for e2e) those tests say so and skip,
# unless KEELSON_REQUIRE_INTEGRATION=1 / KEELSON_REQUIRE_E2E=1 make them fail instead.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ -z "${KUBEBUILDER_ASSETS:-}" ]; then
  if assets="$(bash scripts/testbin.sh)"; then
    export KUBEBUILDER_ASSETS="$assets"
  else
    echo "test: kube-apiserver/etcd not available; integration tests will be skipped" >&2
  fi
fi
# only the garbage-collector test runs it; without it that test says so (or fails under
# KEELSON_REQUIRE_INTEGRATION=1)
bash scripts/testbin.sh kube-controller-manager >/dev/null ||
  echo "test: no kube-controller-manager; the garbage-collector test will say so" >&2

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
deno test --allow-all "$@" tests/ 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}

# One plain closing line, whatever the runner printed before it.
summary="$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^(ok|FAILED) \| [0-9]+ passed' | tail -1)"
passed="$(echo "$summary" | sed -E 's/.*\| ([0-9]+) passed.*/\1/')"
failed="$(echo "$summary" | sed -E 's/.*\| ([0-9]+) failed.*/\1/')"
ignored="$(echo "$summary" | grep -oE '[0-9]+ ignored' | grep -oE '[0-9]+' || echo 0)"
echo "tests: ${passed:-0} passed, ${failed:-0} failed, ${ignored:-0} skipped"
exit "$rc"
