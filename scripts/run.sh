#!/usr/bin/env bash
# The main job: build, then run one talosbox node in container mode in the
# foreground, as PID 1 of fresh namespaces when we are root. Ctrl-C (or
# SIGTERM) stops its services in order and ends it.
#
#   scripts/run.sh BINARY LINKS_DIR
#   NODE_DIR   where the node keeps its state (default _out/node)
#   CONFIG     the machine config (default: generated into _out/cluster)
set -euo pipefail
bin=$1 links=$2
out=$(dirname "$bin")
node_dir=${NODE_DIR:-$out/node}
config=${CONFIG:-$out/cluster/controlplane.yaml}

if [ ! -f "$config" ]; then
  echo "generating a cluster config in $(dirname "$config") (talosctl gen config)"
  "$links/talosctl" gen config local https://127.0.0.1:6443 -o "$(dirname "$config")"
fi

cat <<MSG

Starting a talosbox node in container mode:
  state:  $node_dir (STATE in state/, EPHEMERAL in ephemeral/)
  config: $config
Stop it with Ctrl-C. From another terminal, talk to it through apid (:50000):
  export TALOSCONFIG=$(dirname "$config")/talosconfig
  $links/talosctl -e 127.0.0.1 -n 127.0.0.1 version
  $links/talosctl -e 127.0.0.1 -n 127.0.0.1 services
  $links/talosctl -e 127.0.0.1 -n 127.0.0.1 get machinestatus
  $links/talosctl -e 127.0.0.1 -n 127.0.0.1 logs machined --tail 20
  $links/talosctl -e 127.0.0.1 -n 127.0.0.1 health
To see maintenance mode, start one with no config at all (apid then serves
apply-config --insecure):
  $links/machined --platform container --state-dir /tmp/empty-node

MSG

# The node shares this machine's network namespace here, so networkd stays off.
cmd=("$links/init" --platform container --state-dir "$node_dir" --config "$config" --networkd=false)
if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null; then
  exec unshare --fork --pid --mount --uts --ipc --mount-proc "${cmd[@]}"
fi
exec "${cmd[@]}"
