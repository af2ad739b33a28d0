#!/usr/bin/env bash
# Times `talosctl cluster create qemu` (3 control planes, 1 worker, each a
# QEMU machine under TCG with 1 vCPU, until healthy; per stage), an
# in-place reboot of a control plane until healthy again, and `cluster
# destroy`; reports each guest's memory (talosctl memory) and each QEMU
# process's resident size on the host. Needs root (the segment's tap).
#
#   scripts/bench-qemu-cluster.sh       (builds _out/talosbox and fetches the kernel first)
#   RUNS=3 scripts/bench-qemu-cluster.sh
set -euo pipefail
cd "$(dirname "$0")/.."
make -s build
TALOSBOX=_out/talosbox scripts/kernel.sh _out/kernel >/dev/null
bin=$PWD/_out/talosbox
runs=${RUNS:-1}
home=$(mktemp -d)
name=qbench-$$
trap '"$bin" talosctl cluster destroy --name "$name" --state "$home/state" >/dev/null 2>&1 || true; rm -rf "$home"' EXIT

now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc; }
tc() { HOME=$home "$bin" talosctl "$@"; }

for i in $(seq "$runs"); do
  start=$(now)
  tc cluster create qemu --name "$name" --state "$home/state" --subnet 10.219.$i.0/24 --controlplanes 3 --workers 1 \
    --cpus 1 --cpus-workers 1 --memory 1024 --memory-workers 1024 --kernel-dir _out/kernel --wait-timeout 10m | grep -E 'is healthy'
  printf 'run %d: create until healthy %.2fs\n' "$i" "$(since "$start")"

  if [ "$i" -eq "$runs" ]; then
    echo "guest memory (MiB, talosctl memory):"
    tc -n 10.219.$i.2,10.219.$i.3,10.219.$i.4,10.219.$i.5 memory | sed 's/^/  /'
    echo "QEMU resident size on the host:"
    for p in $(jq -r '.nodes[].pid' "$home/state/$name/state.json" 2>/dev/null || grep -o '"pid": [0-9]*' "$home/state/$name/state.json" | grep -o '[0-9]*'); do
      printf '  pid %s: %s MiB\n' "$p" "$(($(awk '/VmRSS/ {print $2}' /proc/"$p"/status) / 1024))"
    done

    console=$home/state/$name/$name-controlplane-2/console.log
    boots=$(grep -c '\[talos\] machined v' "$console")
    start=$(now)
    tc -n 10.219.$i.3 reboot >/dev/null
    until [ "$(grep -c '\[talos\] machined v' "$console")" -gt "$boots" ]; do sleep 0.1; done
    tc health --wait-timeout 5m >/dev/null
    printf 'run %d: control plane reboot until healthy %.2fs\n' "$i" "$(since "$start")"
  fi

  start=$(now)
  tc cluster destroy --name "$name" --state "$home/state" >/dev/null
  printf 'run %d: destroy %.2fs\n' "$i" "$(since "$start")"
done
