#!/usr/bin/env bash
# Runs every Go fuzz target in the module for FUZZTIME each (10s by
# default). Targets are found in the source (a func FuzzX in a _test.go
# file), so a new Fuzz function is never left out; reading the source
# rather than asking `go test -list` of every package saves compiling and
# linking a hundred test binaries that hold no target (minutes on 2 cores).
# Minimizing a new input is capped at 1s: with large seeds (LUKS2 and META
# images) the default 60s per input outlasts the fuzzing itself.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10s}

count=0
# "./dir FuzzName" per target, in a stable order.
targets=$({ git ls-files '*_test.go' 2>/dev/null || find . -name '*_test.go' -not -path './_out/*' | sed 's#^\./##'; } | xargs grep -HoE '^func Fuzz[A-Za-z0-9_]*\(' |
  sed -E 's#^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\($#./\1 \2#; s#^[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\($#. \1#' | sort -u)
[ -n "$targets" ] || { echo "fuzz: no targets found"; exit 1; }
while read -r pkg target; do
  echo "fuzz $pkg $target ($fuzztime)"
  # Go 1.26's fuzz coordinator can report its own -fuzztime deadline as
  # a failure ("context deadline exceeded", no failing input written:
  # golang/go#75804, fixed in Go 1.27). Such a run is repeated once; a
  # failing input, or the same error twice, fails the run.
  for attempt in 1 2; do
    if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime 1s "$pkg" </dev/null >/tmp/fuzz.$$.log 2>&1; then
      break
    fi
    if [ "$attempt" = 1 ] && grep -q 'context deadline exceeded' /tmp/fuzz.$$.log && ! grep -q 'Failing input written' /tmp/fuzz.$$.log; then
      echo "fuzz $pkg $target: the coordinator's deadline race (golang/go#75804), no failing input: once more"
      continue
    fi
    cat /tmp/fuzz.$$.log; rm -f /tmp/fuzz.$$.log; exit 1
  done
  tail -n 1 /tmp/fuzz.$$.log
  count=$((count + 1))
done <<<"$targets"
rm -f /tmp/fuzz.$$.log
echo "fuzz: $count targets passed"
