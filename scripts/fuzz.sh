#!/usr/bin/env bash
# Runs every Go fuzz target in the module for FUZZTIME each (10s by
# default). Targets are discovered, so a new Fuzz function is never left out.
# Minimizing a new input is capped at 1s: with large seeds (LUKS2 and META
# images) the default 60s per input outlasts the fuzzing itself.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10s}

count=0
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
    echo "fuzz $pkg $target ($fuzztime)"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime 1s "$pkg" >/tmp/fuzz.$$.log 2>&1 || {
      cat /tmp/fuzz.$$.log; rm -f /tmp/fuzz.$$.log; exit 1; }
    tail -n 1 /tmp/fuzz.$$.log
    count=$((count + 1))
  done
done
rm -f /tmp/fuzz.$$.log
echo "fuzz: $count targets passed"
