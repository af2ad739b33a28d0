#!/usr/bin/env bash
# Kubernetes on talosbox, measured (boot to Ready, memory, API latency):
#   1. `talosctl cluster create` to healthy (every node Ready, CoreDNS up),
#      for 1+1 and 3+1 Docker clusters, with the timeline it prints: each
#      step of the client, of every node's services and of Kubernetes'
#      bring-up, in seconds since the create began;
#   2. the memory of the first control-plane node with everything running,
#      by component (RSS and PSS, from /proc for the node's processes), and
#      what its container's cgroup is charged;
#   3. the binary's size and `talosctl version --client`'s time.
# Usage: scripts/bench-k8s.sh [--peer] [LINKS_DIR]   (after make images; needs root and Docker)
# SHAPES="1:1 3:1" picks the clusters. --peer also tries the peer, k3s (then
# k0s), from the Go module proxy, and says what stopped it if it cannot be
# had. For benchstat across runs: go test -tags e2e,... -run '^$' -bench
# DockerClusterCreate -count 5 . (BenchmarkDockerClusterCreate).
set -euo pipefail
peer=false
if [ "${1:-}" = --peer ]; then
  peer=true
  shift
fi
links=${1:-_out/bin}
talosctl=$links/talosctl

# K3S_COMMIT and K0S_COMMIT are one exact commit each (k3s's and k0s's
# release tags, v1.34.4+k3s1 or v1.34.4+k0s.0, are not Go module versions):
# the proxy lists no version of either module, so a wrapper module that
# copies their replace directives can only ask for a commit.
K3S_COMMIT=${K3S_COMMIT:-00014d2846a2c2cf4fb506d90f27cc04bb9497f3}
K0S_COMMIT=${K0S_COMMIT:-faf9829716a2f7c5937cea9dce5b3fde66afb63f} # v1.34.4+k0s.0

# peer_bench builds the peer the way this project builds Kubernetes (a
# wrapper module from the Go module proxy) and, if it can be had, says so;
# where the proxy refuses it, the refusal is the result.
peer_bench() {
  local dir mod commit out
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' RETURN
  for mod in github.com/k3s-io/k3s@$K3S_COMMIT github.com/k0sproject/k0s@$K0S_COMMIT; do
    commit=${mod#*@}
    (cd "$dir" && go mod init peer >/dev/null 2>&1 || true)
    if out=$(cd "$dir" && GOFLAGS=-mod=mod go mod download -json "$mod" 2>&1); then
      echo "peer ${mod%@*}: the proxy serves $commit; building it is not scripted yet"
      return 0
    fi
    echo "peer ${mod%@*}@$commit: cannot be built here: the Go module proxy refuses it:"
    grep -o '"Error": *"[^"]*' <<<"$out" | sed 's/^"Error": *"/  /' | head -2
  done
}

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
shapes=${SHAPES:-1:1 3:1}
for shape in $shapes; do
  cps=${shape%:*} workers=${shape#*:}
  name=bench-k8s-$cps-$workers
  "$talosctl" cluster destroy --name "$name" >/dev/null 2>&1 || true
  subnet=$((subnet + 1))

  out=$("$talosctl" cluster create --name "$name" --subnet "10.$subnet.0.0/24" --controlplanes "$cps" --workers "$workers" \
    --memory 1536 --memory-workers 1024 --wait-timeout 15m 2>&1)
  echo "cluster create ${cps}+${workers}: $(grep 'is healthy' <<<"$out")"
  sed -n '/^timeline:$/,$p' <<<"$out"

  if [ "$shape" = "${shapes%% *}" ] || [ "$cps" = 1 ]; then
    init=$(docker inspect -f '{{.State.Pid}}' "$name-controlplane-1")
    echo "memory of $name-controlplane-1 (by process name):"
    rss_by_component "$init"
    cgroup_memory "$name-controlplane-1"
  fi

  "$talosctl" cluster destroy --name "$name" >/dev/null
done

echo "binary: $(stat -c %s "$(readlink -f "$talosctl")") bytes ($(readlink -f "$talosctl"))"
# The client's start: everything the multicall binary initializes runs for
# every applet (best of 20).
best=999999
for _ in $(seq 20); do
  t0=$(date +%s%N)
  "$talosctl" version --client >/dev/null
  t=$((($(date +%s%N) - t0) / 1000))
  [ "$t" -lt "$best" ] && best=$t
done
echo "talosctl version --client: $((best / 1000)).$(((best % 1000) / 100)) ms (best of 20)"

if $peer; then
  peer_bench
fi
