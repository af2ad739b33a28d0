#!/usr/bin/env bash
# How long a worker stays NotReady when the first control plane, the
# cluster endpoint that `talosctl cluster create` makes, is reset with
# `reset --graceful --reboot`: a 3+1 Docker cluster, the reset,
# then the worker's Ready condition and an outside client's /readyz
# sampled every second for DURATION seconds, asked of the second control
# plane's API server (the endpoint's own is gone).
# Usage: scripts/bench-reset.sh [LINKS_DIR]   (after make images; needs root and Docker)
#   DURATION  seconds to sample after the reset (240)
#   SUBNET    the cluster's /24 (10.217.0.0/24)
#   ARGS      more flags for cluster create (e.g. --use-vip)
set -euo pipefail
links=$(realpath "${1:-_out/bin}")
talosctl=$links/talosctl
kubectl=${KUBECTL:-$(realpath _out/bin/kubectl)}
images=${IMAGES_DIR:-$(realpath _out/images)}
duration=${DURATION:-240}
subnet=${SUBNET:-10.217.0.0/24}
name=bench-reset
prefix=${subnet%.0/24}
cp1=$prefix.2 cp2=$prefix.3 w=$prefix.5

home=$(mktemp -d)
export HOME=$home TALOSCONFIG=$home/talosconfig KUBECONFIG=$home/kubeconfig
trap '"$talosctl" cluster destroy --name $name >/dev/null 2>&1 || true; rm -rf "$home"' EXIT

"$talosctl" cluster destroy --name $name >/dev/null 2>&1 || true
# shellcheck disable=SC2086 # ARGS is a list of flags
"$talosctl" cluster create --name $name --subnet "$subnet" --images-dir "$images" --controlplanes 3 --workers 1 \
  --memory 1280 --memory-workers 768 --wait-timeout 15m ${ARGS:-} >/dev/null

kube() { "$kubectl" --request-timeout 2s --server "https://$cp2:6443" --insecure-skip-tls-verify "$@"; }
worker=$(kube get nodes -o wide --no-headers | awk -v ip=$w '$6 == ip {print $1}')

echo "reset $cp1 (--graceful --reboot); sampling $worker's Ready and /readyz on $cp2 for ${duration}s"
"$talosctl" -e $cp1 -n $cp1 reset --graceful --reboot >/dev/null

notready=0 unserved=0 start=$(date +%s)
while [ $(( $(date +%s) - start )) -lt "$duration" ]; do
  st=$(kube get node "$worker" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || echo "?")
  [ "$st" = "True" ] || notready=$((notready + 1))
  kube get --raw /readyz >/dev/null 2>&1 || unserved=$((unserved + 1))
  sleep 1
done

echo "worker NotReady (or unknown) in $notready of ~${duration} one-second samples; /readyz on $cp2 failed in $unserved"
