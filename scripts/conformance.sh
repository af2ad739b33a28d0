#!/usr/bin/env bash
# make conformance: the upstream Kubernetes [Conformance] suite against a
# new cluster with two schedulable nodes (the suite wants two), with the
# e2e.test make images built from source, and nothing downloaded. The
# cluster is destroyed after the run.
#
#   scripts/conformance.sh LINKS_DIR
#   MODE         certified (default: every spec one at a time, results in
#                conformance-results/v<minor>/talosbox) or fast
#   PROVISIONER  docker (default: 1 control plane and 2 workers in
#                containers) or qemu (1 control plane that takes pods,
#                allowSchedulingOnControlPlanes, and 1 worker, on metal
#                under QEMU: slow without KVM)
#   CLUSTER      the cluster's name (default conformance)
#   ARGS         more flags for `talosctl conformance kubernetes` (--focus ...)
set -euo pipefail
links=$1
name=${CLUSTER:-conformance}
subnet=10.6.0.0/24

case ${PROVISIONER:-docker} in
docker)
  "$links/talosctl" cluster create --name "$name" --subnet "$subnet" --controlplanes 1 --workers 2
  ;;
qemu)
  "$links/talosctl" cluster create qemu --name "$name" --subnet "$subnet" --controlplanes 1 --workers 1 \
    --cpus 2 --memory 3072 --cpus-workers 2 --memory-workers 3072 --wait-timeout 40m \
    --config-patch '{cluster: {allowSchedulingOnControlPlanes: true}}'
  ;;
*)
  echo "PROVISIONER=$PROVISIONER: docker or qemu" >&2
  exit 2
  ;;
esac
trap '"$links/talosctl" cluster destroy --name "$name"' EXIT

# shellcheck disable=SC2086 # ARGS is a list of flags
"$links/talosctl" --context "$name" -n 10.6.0.2 conformance kubernetes --mode "${MODE:-certified}" ${ARGS:-}
