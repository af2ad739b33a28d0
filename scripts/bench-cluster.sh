#!/usr/bin/env bash
# Times `talosctl cluster create` (3 control planes, 1 worker, until
# healthy; per stage) and `cluster destroy`, and samples each node's
# memory with docker stats SETTLE seconds after the cluster is healthy.
#
#   scripts/bench-cluster.sh            (builds _out/talosbox first)
#   RUNS=3 SETTLE=60 scripts/bench-cluster.sh
set -euo pipefail
cd "$(dirname "$0")/.."
make -s build
bin=$PWD/_out/talosbox
runs=${RUNS:-1}
settle=${SETTLE:-60}
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT

for i in $(seq "$runs"); do
  name=bench-$$-$i
  start=$(date +%s.%N)
  HOME=$home "$bin" talosctl cluster create --name "$name" --subnet 10.218.$i.0/24 --controlplanes 3 --workers 1 --wait-timeout 5m |
    grep -E 'is healthy|etcd to be bootstrapped'
  end=$(date +%s.%N)
  printf 'run %d: create until healthy %.2fs\n' "$i" "$(echo "$end - $start" | bc)"

  if [ "$i" -eq "$runs" ]; then
    echo "memory of each node ${settle}s after healthy:"
    sleep "$settle" # a measurement window, not synchronization
    docker stats --no-stream --format '  {{.Name}}: {{.MemUsage}}' $(docker ps -q --filter "label=talosbox.cluster.name=$name")
  fi

  start=$(date +%s.%N)
  HOME=$home "$bin" talosctl cluster destroy --name "$name" >/dev/null
  end=$(date +%s.%N)
  printf 'run %d: destroy %.2fs\n' "$i" "$(echo "$end - $start" | bc)"
done
