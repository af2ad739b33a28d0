#!/usr/bin/env bash
# Container-mode node: time from process start until every service is up
# (the "[talos] services:" line, printed from the Services resources once
# the boot sequence is done), over RUNS boots; then the idle RSS of the
# node process IDLE seconds after boot (60 by default).
set -euo pipefail
cd "$(dirname "$0")/.."
make -s build >/dev/null
bin=$PWD/_out/talosbox
runs=${RUNS:-20}
idle=${IDLE:-60}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

"$bin" talosctl gen config bench https://10.5.0.2:6443 -o "$work" -t controlplane >/dev/null 2>&1

boot_ms() {
  local dir=$1 log=$1.log start now
  start=$(date +%s%N)
  "$bin" machined --platform container --networkd=false --state-dir "$dir" --config "$work/controlplane.yaml" >"$log" 2>&1 &
  local pid=$!
  until grep -q '^\[talos\] services: ' "$log"; do
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.002
  done
  now=$(date +%s%N)
  echo "$(( (now - start) / 1000000 )) $pid"
}

times=()
for i in $(seq "$runs"); do
  read -r ms pid < <(boot_ms "$work/node-$i")
  times+=("$ms")
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
done
sorted=$(printf '%s\n' "${times[@]}" | sort -n)
echo "boot to all services up (container mode, $runs runs): median $(echo "$sorted" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}') ms, min $(echo "$sorted" | head -1) ms, max $(echo "$sorted" | tail -1) ms"
grep '^\[talos\] services: ' "$work/node-1.log"

read -r ms pid < <(boot_ms "$work/node-idle")
echo "idling ${idle}s..."
sleep "$idle"
rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
echo "idle RSS after ${idle}s: machined process $((rss / 1024)) MiB ($rss KiB)"
for child in $(cat "/proc/$pid/task/"*/children 2>/dev/null); do
  echo "  child $(cat /proc/$child/comm): $(( $(awk '/VmRSS/ {print $2}' /proc/$child/status) / 1024 )) MiB (a separate process, not counted above)"
done
kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
