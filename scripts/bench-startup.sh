#!/usr/bin/env bash
# Client start-up cost of the multicall binary: wall time and peak RSS of
# `talosctl --help` and `talosctl version --client`, and the package init
# work (GODEBUG=inittrace=1) every applet pays before main.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s build >/dev/null
bin=$PWD/_out/talosbox
runs=${RUNS:-50}

time_it() {
  local start end
  start=$(date +%s%N)
  for _ in $(seq "$runs"); do "$@" >/dev/null; done
  end=$(date +%s%N)
  echo "$(( (end - start) / runs / 1000 )) µs"
}

rss() { /usr/bin/env time -f '%M' "$@" 2>&1 >/dev/null | tail -1; }

echo "binary: $(stat -c %s "$bin") bytes"
for args in "talosctl --help" "talosctl version --client"; do
  # shellcheck disable=SC2086
  echo "talosbox $args: $(time_it "$bin" $args) mean over $runs runs, peak RSS $(rss "$bin" $args 2>/dev/null || echo '?') KiB"
done

trace=$(GODEBUG=inittrace=1 "$bin" talosctl version --client 2>&1 >/dev/null | grep '^init ')
echo "package inits: $(echo "$trace" | wc -l) packages, $(echo "$trace" | awk '{ms += $5} END {printf "%.3f", ms}') ms, $(echo "$trace" | awk '{b += $8} END {print b}') bytes allocated"
echo "heaviest inits:"
echo "$trace" | sort -k5 -n -r | head -5 | awk '{printf "  %-50s %s ms %s bytes\n", $2, $5, $8}'
