#!/usr/bin/env bash
# make conformance: the upstream Kubernetes [Conformance] suite against a
# new Docker cluster of 1 control plane and 2 workers (the suite wants two
# schedulable nodes), with the e2e.test make images built from source, and
# nothing downloaded. The cluster is destroyed after the run.
#
#   scripts/conformance.sh LINKS_DIR
#   MODE      certified (default: every spec one at a time, results in
#             conformance-results/v<minor>/talosbox) or fast
#   CLUSTER   the cluster's name (default conformance)
#   ARGS      more flags for `talosctl conformance kubernetes` (--focus ...)
set -euo pipefail
links=$1
name=${CLUSTER:-conformance}
subnet=10.6.0.0/24

"$links/talosctl" cluster create --name "$name" --subnet "$subnet" --controlplanes 1 --workers 2
trap '"$links/talosctl" cluster destroy --name "$name"' EXIT

# shellcheck disable=SC2086 # ARGS is a list of flags
"$links/talosctl" --context "$name" -n 10.6.0.2 conformance kubernetes --mode "${MODE:-certified}" ${ARGS:-}
