#!/usr/bin/env bash
# Kubernetes on talosbox, measured (issue 17's numbers):
#   1. `talosctl cluster create` to healthy (every node Ready, CoreDNS up),
#      for 1+1 and 3+1 Docker clusters;
#   2. the memory (RSS) of the first control-plane node with everything
#      running, by component, read from /proc for the node's processes;
#   3. the binary's size.
# Usage: scripts/bench-k8s.sh [LINKS_DIR]   (after make images; needs root and Docker)
# SHAPES="1:1 3:1" picks the clusters.
set -euo pipefail
links=${1:-_out/bin}
talosctl=$links/talosctl

rss_by_component() {
  local init=$1
  # Every process whose ancestry reaches the node's init, by command name.
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    q=$pid
    while [ "$q" -gt 1 ] 2>/dev/null; do
      [ "$q" = "$init" ] && break
      q=$(awk '{print $4}' "/proc/$q/stat" 2>/dev/null || echo 0)
    done
    [ "$q" = "$init" ] || continue
    comm=$(cat "/proc/$pid/comm" 2>/dev/null) || continue
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null) || continue
    echo "$comm ${rss:-0}"
  done | awk '{k[$1]+=$2; t+=$2} END {for (c in k) printf "  %-24s %7.1f MiB\n", c, k[c]/1024; printf "  %-24s %7.1f MiB\n", "TOTAL", t/1024}' | sort -k2 -n -r
}

subnet=20
for shape in ${SHAPES:-1:1 3:1}; do
  cps=${shape%:*} workers=${shape#*:}
  name=bench-k8s-$cps-$workers
  "$talosctl" cluster destroy --name "$name" >/dev/null 2>&1 || true
  subnet=$((subnet + 1))

  out=$("$talosctl" cluster create --name "$name" --subnet "10.$subnet.0.0/24" --controlplanes "$cps" --workers "$workers" \
    --memory 1536 --memory-workers 1024 --wait-timeout 15m 2>&1)
  echo "cluster create ${cps}+${workers}: $(grep 'is healthy' <<<"$out")"

  if [ "$shape" = "${SHAPES%% *}" ] || [ "$cps" = 1 ]; then
    init=$(docker inspect -f '{{.State.Pid}}' "$name-controlplane-1")
    echo "memory of $name-controlplane-1 (RSS by process name):"
    rss_by_component "$init"
  fi

  "$talosctl" cluster destroy --name "$name" >/dev/null
done

echo "binary: $(stat -c %s "$(readlink -f "$talosctl")") bytes ($(readlink -f "$talosctl"))"
