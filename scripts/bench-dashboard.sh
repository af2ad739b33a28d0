#!/usr/bin/env bash
# What `talosctl dashboard` costs the node it watches: machined's CPU time
# (apid runs inside it) and its RSS over a window with nobody watching,
# then over the same window with the dashboard open at -d 1s (the issue's
# "at least every second") and at its default 3s, in a pseudo-terminal.
# Usage: scripts/bench-dashboard.sh [LINKS_DIR]   (after make images; root and Docker)
# WINDOW=60 sets the window in seconds. Uses a running cluster named by
# CLUSTER (default: makes a 1-node one, bench-dash, and removes it).
set -euo pipefail
links=${1:-_out/bin}
talosctl=$(cd "$links" && pwd)/talosctl
window=${WINDOW:-60}
name=${CLUSTER:-bench-dash}

if [ -z "${CLUSTER:-}" ]; then
  "$talosctl" cluster destroy --name "$name" >/dev/null 2>&1 || true
  "$talosctl" cluster create --name "$name" --subnet 10.77.0.0/24 --controlplanes 1 --workers 0 --images-dir _out/images >/dev/null
  trap '"$talosctl" cluster destroy --name "$name" >/dev/null 2>&1 || true' EXIT
fi

node=$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$name-controlplane-1")
pid=$(docker inspect -f '{{.State.Pid}}' "$name-controlplane-1")
hz=$(getconf CLK_TCK)

cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$pid/status"; }

measure() {
  local label=$1 c0 c1 r0 r1
  c0=$(cpu); r0=$(rss)
  sleep "$window"
  c1=$(cpu); r1=$(rss)
  awk -v l="$label" -v c="$((c1 - c0))" -v hz="$hz" -v w="$window" -v r0="$r0" -v r1="$r1" \
    'BEGIN {printf "%-28s machined CPU %6.2f s in %d s (%5.2f%% of a core), RSS %.1f -> %.1f MiB\n", l, c/hz, w, 100*c/hz/w, r0/1024, r1/1024}'
}

echo "node $node (machined pid $pid), window ${window}s"
measure "idle"

for interval in 1s 3s; do
  # script(1) gives the dashboard the terminal it draws on.
  TERM=xterm-256color script -qfec "$talosctl -n $node dashboard -d $interval" /dev/null >/dev/null 2>&1 &
  dash=$!
  sleep 5 # the first full poll and the log's tail are not the steady state
  measure "dashboard -d $interval"
  kill "$dash" 2>/dev/null || true
  wait "$dash" 2>/dev/null || true
done
