#!/usr/bin/env bash
# Kubernetes on talosbox, measured (boot to Ready, memory, API latency):
#   1. `talosctl cluster create` to healthy (every node Ready, CoreDNS up),
#      for 1+1 and 3+1 Docker clusters;
#   2. the memory of the first control-plane node with everything running,
#      by component (RSS and PSS, from /proc for the node's processes), and
#      what its container's cgroup is charged;
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
    # PSS shares each page among the processes mapping it: the multicall
    # binary's text is mapped by talosbox, both containerds and every
    # shim, and RSS counts it once per process.
    pss=$(awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup" 2>/dev/null) || pss=0
    echo "$comm ${rss:-0} ${pss:-0}"
  done | awk '{k[$1]+=$2; p[$1]+=$3; n[$1]++; t+=$2; tp+=$3}
    END {printf "  %-24s %9s %9s %s\n", "PROCESS", "RSS MiB", "PSS MiB", "COUNT";
         for (c in k) printf "  %-24s %9.1f %9.1f %d\n", c, k[c]/1024, p[c]/1024, n[c];
         printf "  %-24s %9.1f %9.1f\n", "TOTAL", t/1024, tp/1024}' | sort -k3 -n -r
}

# cgroup_memory prints what the kernel charges the node's container: all
# its processes' anonymous memory plus the page cache they brought in.
cgroup_memory() {
  local id dir
  id=$(docker inspect -f '{{.Id}}' "$1")
  # cgroup v1 keeps memory in a hierarchy of its own; v2 has one tree.
  local root=/sys/fs/cgroup
  [ -d $root/memory ] && root=$root/memory
  dir=$(find $root -maxdepth 4 -type d -name "*$id*" 2>/dev/null | head -1)
  [ -n "$dir" ] || { echo "  (no cgroup found for $1)"; return; }
  if [ -f "$dir/memory.current" ]; then
    awk -v cur="$(cat "$dir/memory.current")" '/^anon / {a=$2} /^file / {f=$2}
      END {printf "  cgroup memory.current %.1f MiB (anon %.1f, file %.1f)\n", cur/1048576, a/1048576, f/1048576}' "$dir/memory.stat"
  else
    awk '/^total_rss / {a=$2} /^total_cache / {f=$2}
      END {printf "  cgroup anon %.1f MiB, page cache %.1f MiB\n", a/1048576, f/1048576}' "$dir/memory.stat"
  fi
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
    echo "memory of $name-controlplane-1 (by process name):"
    rss_by_component "$init"
    cgroup_memory "$name-controlplane-1"
  fi

  "$talosctl" cluster destroy --name "$name" >/dev/null
done

echo "binary: $(stat -c %s "$(readlink -f "$talosctl")") bytes ($(readlink -f "$talosctl"))"
